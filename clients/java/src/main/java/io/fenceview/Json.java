package io.fenceview;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The small JSON reader and writer the client needs for fenceview's bodies.
 *
 * <p>Objects read as {@code Map<String,Object>} (insertion order kept), arrays as
 * {@code List<Object>}, strings, booleans and {@code null} as themselves. An integer
 * that fits a {@code long} reads as a {@link Long}, exactly: tokens are 64-bit and
 * must never pass through a {@code double}. Larger integers read as {@link BigInteger}
 * and numbers with a fraction or exponent as {@link BigDecimal}, so nothing is
 * rounded silently; the accessors below refuse them where a long is wanted.
 *
 * <p>Input is bounded: nesting deeper than {@value #MAX_DEPTH} is refused, and the
 * client never hands it more than its response limit.
 */
final class Json {
    static final int MAX_DEPTH = 64;

    /** The one-letter escapes a string may hold, and (at the same index) what each stands for. */
    private static final String ESCAPE_LETTERS = "\"\\/bfnrt";
    private static final String ESCAPED = "\"\\/\b\f\n\r\t";

    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    /** Parses one JSON value; anything but whitespace after it is an error. */
    static Object parse(String text) {
        Json p = new Json(text);
        p.ws();
        Object v = p.value(0);
        p.ws();
        if (p.i != text.length()) {
            throw p.error("unexpected data after the value");
        }
        return v;
    }

    /** Parses a JSON object; any other value is an error. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> parseObject(String text) {
        Object v = parse(text);
        if (!(v instanceof Map)) {
            throw new IllegalArgumentException("JSON: not an object");
        }
        return (Map<String, Object>) v;
    }

    private IllegalArgumentException error(String msg) {
        return new IllegalArgumentException("JSON: " + msg + " at offset " + i);
    }

    private void ws() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            i++;
        }
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) {
            throw error("nested too deeply");
        }
        if (i >= s.length()) {
            throw error("unexpected end");
        }
        char c = s.charAt(i);
        switch (c) {
            case '{':
                return object(depth);
            case '[':
                return array(depth);
            case '"':
                return string();
            case 't':
                literal("true");
                return Boolean.TRUE;
            case 'f':
                literal("false");
                return Boolean.FALSE;
            case 'n':
                literal("null");
                return null;
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected character '" + c + "'");
        }
    }

    private void literal(String word) {
        if (!s.startsWith(word, i)) {
            throw error("bad literal");
        }
        i += word.length();
    }

    private Map<String, Object> object(int depth) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (empty('}')) {
            return m;
        }
        while (true) {
            ws();
            if (i >= s.length() || s.charAt(i) != '"') {
                throw error("expected a string key");
            }
            String k = string();
            ws();
            if (i >= s.length() || s.charAt(i) != ':') {
                throw error("expected ':'");
            }
            i++;
            ws();
            m.put(k, value(depth + 1));
            if (!more('}', "object")) {
                return m;
            }
        }
    }

    private List<Object> array(int depth) {
        List<Object> l = new ArrayList<>();
        if (empty(']')) {
            return l;
        }
        while (true) {
            ws();
            l.add(value(depth + 1));
            if (!more(']', "array")) {
                return l;
            }
        }
    }

    /**
     * Steps over the opening bracket at i and the space after it; true when close
     * follows at once (an empty object or array), and steps over that too.
     */
    private boolean empty(char close) {
        i++;
        ws();
        if (i < s.length() && s.charAt(i) == close) {
            i++;
            return true;
        }
        return false;
    }

    /**
     * Reads what follows a member of an object or an element of an array (what):
     * true after a ',' (another comes), false after close (the last one was).
     */
    private boolean more(char close, String what) {
        ws();
        if (i >= s.length()) {
            throw error("unexpected end in " + what);
        }
        char c = s.charAt(i++);
        if (c == close) {
            return false;
        }
        if (c != ',') {
            throw error("expected ',' or '" + close + "'");
        }
        return true;
    }

    private String string() {
        i++; // opening quote
        StringBuilder b = new StringBuilder();
        while (true) {
            if (i >= s.length()) {
                throw error("unterminated string");
            }
            char c = s.charAt(i++);
            if (c == '"') {
                return b.toString();
            }
            if (c < 0x20) {
                throw error("control character in string");
            }
            if (c != '\\') {
                b.append(c);
                continue;
            }
            if (i >= s.length()) {
                throw error("unterminated escape");
            }
            char e = s.charAt(i++);
            int k = ESCAPE_LETTERS.indexOf(e);
            if (k >= 0) {
                b.append(ESCAPED.charAt(k));
            } else if (e == 'u') {
                b.append(hex4());
            } else {
                throw error("bad escape");
            }
        }
    }

    /** The four hex digits of a UTF-16 escape (after the backslash and the u), as the unit they spell. */
    private char hex4() {
        if (i + 4 > s.length()) {
            throw error("short \\u escape");
        }
        int cp = 0;
        for (int k = 0; k < 4; k++) {
            int d = Character.digit(s.charAt(i++), 16);
            if (d < 0) {
                throw error("bad \\u escape");
            }
            cp = cp * 16 + d;
        }
        return (char) cp;
    }

    private Object number() {
        int start = i;
        if (s.charAt(i) == '-') {
            i++;
        }
        if (i >= s.length()) {
            throw error("bad number");
        }
        if (s.charAt(i) == '0') {
            i++;
        } else if (s.charAt(i) >= '1' && s.charAt(i) <= '9') {
            while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
                i++;
            }
        } else {
            throw error("bad number");
        }
        boolean integral = true;
        if (i < s.length() && s.charAt(i) == '.') {
            integral = false;
            i++;
            digits();
        }
        if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            integral = false;
            i++;
            if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) {
                i++;
            }
            digits();
        }
        String t = s.substring(start, i);
        if (!integral) {
            return new BigDecimal(t);
        }
        BigInteger n = new BigInteger(t);
        return n.bitLength() < 64 ? (Object) n.longValueExact() : n;
    }

    private void digits() {
        int start = i;
        while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
            i++;
        }
        if (i == start) {
            throw error("bad number");
        }
    }

    // ---- accessors: a field of the wrong type is an error, never a default ----

    /**
     * The field key of m as a type, absent when it is missing or null; any other
     * value is an error that names the field and what it should have been.
     */
    private static <T> T field(Map<String, Object> m, String key, Class<T> type, T absent, String what) {
        Object v = m.get(key);
        if (v == null) {
            return absent;
        }
        if (!type.isInstance(v)) {
            throw new IllegalArgumentException("JSON: field " + key + " is not " + what);
        }
        return type.cast(v);
    }

    static String str(Map<String, Object> m, String key) {
        return field(m, key, String.class, null, "a string");
    }

    /** A field that must be an integer in long's range; 0 when absent or null. */
    static long lng(Map<String, Object> m, String key) {
        return field(m, key, Long.class, 0L, "a 64-bit integer");
    }

    /** A field that must be an RFC 3339 time; null when absent or null. */
    static java.time.Instant instant(Map<String, Object> m, String key) {
        String v = str(m, key);
        if (v == null) {
            return null;
        }
        try {
            return java.time.OffsetDateTime.parse(v).toInstant();
        } catch (java.time.format.DateTimeParseException e) {
            throw new IllegalArgumentException("JSON: field " + key + " is not an RFC 3339 time", e);
        }
    }

    static boolean bool(Map<String, Object> m, String key) {
        return field(m, key, Boolean.class, false, "a boolean");
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> obj(Map<String, Object> m, String key) {
        return field(m, key, Map.class, Collections.emptyMap(), "an object");
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Map<String, Object> m, String key) {
        return field(m, key, List.class, Collections.emptyList(), "an array");
    }

    // ---- writer ----

    /** Writes maps, lists, strings, numbers, booleans and null as JSON. */
    static String write(Object v) {
        StringBuilder b = new StringBuilder();
        write(b, v, 0);
        return b.toString();
    }

    private static void write(StringBuilder b, Object v, int depth) {
        if (depth > MAX_DEPTH) {
            throw new IllegalArgumentException("JSON: nested too deeply");
        }
        if (v == null) {
            b.append("null");
        } else if (v instanceof String) {
            quote(b, (String) v);
        } else if (v instanceof Boolean) {
            b.append(v);
        } else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte
                || v instanceof BigInteger) {
            b.append(v);
        } else if (v instanceof BigDecimal) {
            b.append(((BigDecimal) v).toString());
        } else if (v instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                quote(b, String.valueOf(e.getKey()));
                b.append(':');
                write(b, e.getValue(), depth + 1);
            }
            b.append('}');
        } else if (v instanceof List) {
            b.append('[');
            boolean first = true;
            for (Object o : (List<?>) v) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                write(b, o, depth + 1);
            }
            b.append(']');
        } else {
            throw new IllegalArgumentException("JSON: cannot write " + v.getClass().getName());
        }
    }

    private static void quote(StringBuilder b, String s) {
        b.append('"');
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    // Control characters, and the line separators some JavaScript
                    // readers choke on, go as escapes.
                    if (c < 0x20 || c == '\u2028' || c == '\u2029') {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        b.append('"');
    }
}
