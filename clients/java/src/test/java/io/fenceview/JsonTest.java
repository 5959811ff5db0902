package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The client's own JSON reader and writer. */
class JsonTest {
    @Test
    void tokensAreReadAsLongLosslessly() {
        Map<String, Object> m = Json.parseObject("{\"token\":9223372036854775807,\"low\":-9223372036854775808,\"n\":9007199254740993}");
        assertEquals(Long.MAX_VALUE, Json.lng(m, "token"));
        assertEquals(Long.MIN_VALUE, Json.lng(m, "low"));
        assertEquals(9007199254740993L, Json.lng(m, "n"), "2^53+1 survives, as it would not through a double");
        Map<String, Object> big = Json.parseObject("{\"token\":9223372036854775808,\"f\":1.5,\"e\":1e3}");
        assertEquals(new BigInteger("9223372036854775808"), big.get("token"));
        assertThrows(IllegalArgumentException.class, () -> Json.lng(big, "token"));
        assertEquals(new BigDecimal("1.5"), big.get("f"));
        assertThrows(IllegalArgumentException.class, () -> Json.lng(big, "e"), "1e3 is not an integer token");
        assertThrows(IllegalArgumentException.class, () -> Json.lng(Json.parseObject("{\"t\":\"5\"}"), "t"));
    }

    @Test
    void badInputIsRefused() {
        for (String bad : List.of("", "{", "{\"a\":}", "{\"a\":1,}", "[1 2]", "{\"a\":01}", "{\"a\":-}", "{\"a\":1.}",
                "\"\\x\"", "\"a\u0001\"", "{\"a\":tru}", "{} x", "{'a':1}", "{\"a\":1e}", "\"\\u12\"")) {
            assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), bad);
        }
        char[] deep = new char[Json.MAX_DEPTH + 2];
        Arrays.fill(deep, '[');
        assertThrows(IllegalArgumentException.class, () -> Json.parse(new String(deep)));
        assertThrows(IllegalArgumentException.class, () -> Json.parseObject("[1]"));
    }

    @Test
    void writesWhatItReads() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("holder", "a \"b\"\\\n\t\u0001\u2028é😀");
        m.put("token", Long.MAX_VALUE);
        m.put("ok", true);
        m.put("none", null);
        m.put("list", List.of(1L, "x", Map.of()));
        String text = Json.write(m);
        assertTrue(text.contains("\\u0001") && text.contains("\\u2028"), text);
        assertEquals(m, Json.parse(text));
        assertEquals("é", Json.parseObject("{\"a\":\"\\u00e9\"}").get("a"));
    }
}
