package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Signature;
import java.time.Duration;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Signed tokens from a real server, verified with the JDK's Ed25519. */
class SignedTokenTest {
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();

    @Test
    void grantsVerifyAndForgeriesDoNot() throws Exception {
        String r = Env.resource("signed");
        try (FenceviewClient c = Env.client()) {
            FencedLock lock = c.getFencedLock(r);
            Long n = lock.lockAndGetToken();
            FencingToken t = lock.getFencingToken();
            assertEquals(n.longValue(), t.number());
            assertTrue(t.signature().length() >= 86, "a signature or a batch carrier: " + t.signature());
            assertFalse(t.keyId().isEmpty());
            assertEquals("resource:" + r, t.scope());
            TokenVerifier v = TokenVerifier.fetch(c, Duration.ofHours(1));
            assertTrue(v.verify(t), "a real grant verifies");
            assertFalse(v.issuer().isEmpty());
            assertEquals(t.issuer(), v.issuer());

            byte[] raw = Base64.getUrlDecoder().decode(t.signature());
            raw[10] ^= 0x01;
            String flipped = B64.encodeToString(raw);
            // Unless the carrier's length is a multiple of 3 bytes, its last character
            // has unused bits: setting one decodes to the same bytes with a lenient decoder.
            String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            int lastAt = t.signature().length() - 1;
            String unusedBits = raw.length % 3 == 0 ? null
                    : t.signature().substring(0, lastAt) + alphabet.charAt(alphabet.indexOf(t.signature().charAt(lastAt)) | 1);
            KeyPair foreign = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
            Signature s = Signature.getInstance("Ed25519");
            s.initSign(foreign.getPrivate());
            s.update(("fenceview/v1 " + r + " " + n).getBytes(StandardCharsets.UTF_8));
            String byForeignKey = B64.encodeToString(s.sign());

            Map<String, Boolean> forgeries = new LinkedHashMap<>();
            forgeries.put("another token", v.verify(r, n + 1, t.signature()));
            forgeries.put("another resource", v.verify(r + "-other", n, t.signature()));
            forgeries.put("a flipped bit", v.verify(r, n, flipped));
            forgeries.put("a foreign key", v.verify(r, n, byForeignKey));
            if (unusedBits != null) {
                forgeries.put("non-zero unused bits", v.verify(r, n, unusedBits));
            }
            forgeries.put("padding", v.verify(r, n, t.signature() + "=="));
            forgeries.put("standard alphabet", v.verify(r, n, t.signature().replace('-', '+').replace('_', '/'))
                    && !t.signature().matches("[A-Za-z0-9]*"));
            forgeries.put("no signature", v.verify(r, n, ""));
            forgeries.put("null", v.verify(r, n, null));
            assertEquals(Map.of(), Map.copyOf(Maps.trueOnly(forgeries)), "forgeries that verified");
            assertTrue(v.verify(r, n, t.signature()), "the real one still does");
            lock.unlock();
        }
    }

    @Test
    void verifierFollowsKeyRotation() throws Exception {
        String r = Env.resource("rotate");
        try (FenceviewClient c = Env.client()) {
            FencedLock lock = c.getFencedLock(r);
            lock.lock();
            FencingToken before = lock.getFencingToken();
            lock.unlock();
            TokenVerifier cached = TokenVerifier.fetch(c, Duration.ofHours(1));
            TokenVerifier following = TokenVerifier.fetch(c, Duration.ZERO);
            int keys = following.keyCount();
            TokenVerifier offline = TokenVerifier.of(currentKeys());

            var rotated = Env.admin("POST", "/v1/signing-keys");
            assertEquals(201, rotated.getKey(), "rotate: " + rotated.getValue());
            lock.lock();
            FencingToken after = lock.getFencingToken();
            lock.unlock();
            assertFalse(after.keyId().equals(before.keyId()), "the new key signs new grants");

            assertTrue(following.verify(after), "a verifier refreshes on an unknown signature");
            assertEquals(keys + 1, following.keyCount());
            assertTrue(following.verify(before), "old keys keep verifying");
            assertFalse(cached.verify(after), "within its refresh interval the verifier keeps its keys");
            assertFalse(offline.verify(after), "a fixed set of keys knows nothing of the new one");
            assertTrue(offline.verify(before));
            cached.refresh();
            assertTrue(cached.verify(after));
        }
        assertThrows(IllegalArgumentException.class, () -> TokenVerifier.of("short"));
    }

    private static String[] currentKeys() throws Exception {
        var keys = Json.list(Env.admin("GET", "/v1/signing-keys").getValue(), "keys");
        String[] out = new String[keys.size()];
        for (int i = 0; i < out.length; i++) {
            @SuppressWarnings("unchecked")
            Map<String, Object> k = (Map<String, Object>) keys.get(i);
            out[i] = Json.str(k, "publicKey");
            assertNotNull(out[i]);
        }
        return out;
    }

    private static final class Maps {
        static Map<String, Boolean> trueOnly(Map<String, Boolean> m) {
            Map<String, Boolean> out = new LinkedHashMap<>();
            m.forEach((k, b) -> {
                if (b) {
                    out.put(k, b);
                }
            });
            return out;
        }
    }
}
