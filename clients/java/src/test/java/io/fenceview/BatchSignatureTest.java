package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.Signature;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Batch signatures against a tree built here independently, by RFC 9162's recursive
 * definitions of MTH and PATH (section 2.1.1 and 2.1.3.1), not by the verifier's
 * iterative walk, signed as the server signs: {@code fenceview/batch/v2 <size> <root>},
 * carrier {@code 0x02}, exclusive and shared grants' leaves mixed in one batch.
 */
class BatchSignatureTest {
    private static final Base64.Encoder B64 = Base64.getUrlEncoder().withoutPadding();
    private static KeyPair key;
    private static TokenVerifier verifier;

    @BeforeAll
    static void keys() throws Exception {
        key = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        byte[] spki = key.getPublic().getEncoded();
        verifier = TokenVerifier.of(B64.encodeToString(Arrays.copyOfRange(spki, spki.length - 32, spki.length)));
    }

    // ---- RFC 9162, recursively ----

    private static byte[] sha(int prefix, byte[]... parts) throws Exception {
        MessageDigest d = MessageDigest.getInstance("SHA-256");
        d.update((byte) prefix);
        for (byte[] p : parts) {
            d.update(p);
        }
        return d.digest();
    }

    /** The largest power of two smaller than n (n > 1). */
    private static int split(int n) {
        int k = 1;
        while (k * 2 < n) {
            k *= 2;
        }
        return k;
    }

    private static byte[] mth(List<byte[]> d) throws Exception {
        if (d.size() == 1) {
            return sha(0, d.get(0));
        }
        int k = split(d.size());
        return sha(1, mth(d.subList(0, k)), mth(d.subList(k, d.size())));
    }

    private static List<byte[]> path(int m, List<byte[]> d) throws Exception {
        List<byte[]> out = new ArrayList<>();
        if (d.size() == 1) {
            return out;
        }
        int k = split(d.size());
        if (m < k) {
            out.addAll(path(m, d.subList(0, k)));
            out.add(mth(d.subList(k, d.size())));
        } else {
            out.addAll(path(m - k, d.subList(k, d.size())));
            out.add(mth(d.subList(0, k)));
        }
        return out;
    }

    // ---- a batch as the server would sign it ----

    private static String resource(int n, int i) {
        return "batch-" + n + "-" + i;
    }

    private static long token(int i) {
        return 1000 + i;
    }

    /** Whether leaf i is a shared grant's (a reader's): every third, so each batch of 2 or more mixes both. */
    private static boolean shared(int i) {
        return i % 3 == 1;
    }

    private static List<byte[]> messages(int n) {
        List<byte[]> d = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            d.add(("fenceview/v1 " + resource(n, i) + " " + token(i) + (shared(i) ? " shared" : "")).getBytes(StandardCharsets.UTF_8));
        }
        return d;
    }

    private static byte[] sign(byte[] msg) throws Exception {
        Signature s = Signature.getInstance("Ed25519");
        s.initSign(key.getPrivate());
        s.update(msg);
        return s.sign();
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x));
        }
        return s.toString();
    }

    /** The raw carriers of every leaf of a batch of n. */
    private static List<byte[]> carriers(int n) throws Exception {
        List<byte[]> d = messages(n);
        byte[] sig = sign(("fenceview/batch/v2 " + n + " " + hex(mth(d))).getBytes(StandardCharsets.UTF_8));
        List<byte[]> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(carrier(sig, i, n, path(i, d)));
        }
        return out;
    }

    private static byte[] carrier(byte[] sig, long index, long size, List<byte[]> path) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.write(0x02);
        b.writeBytes(sig);
        b.writeBytes(ByteBuffer.allocate(8).putInt((int) index).putInt((int) size).array());
        path.forEach(b::writeBytes);
        return b.toByteArray();
    }

    private static boolean verify(int n, int i, byte[] raw) {
        return verifier.verifyGrant(resource(n, i), token(i), shared(i), B64.encodeToString(raw));
    }

    // ---- the tests ----

    @Test
    void everyLeafOfEveryBatchUpTo70Verifies() throws Exception {
        for (int n = 1; n <= 70; n++) {
            List<byte[]> cs = carriers(n);
            for (int i = 0; i < n; i++) {
                String text = B64.encodeToString(cs.get(i));
                assertTrue(verify(n, i, cs.get(i)), "leaf " + i + " of " + n);
                if (i <= 1 || i == n - 1) { // (each costs Ed25519 verifications: no cached root)
                    // A reader's token never verifies as a writer's, nor the reverse.
                    assertFalse(verifier.verifyGrant(resource(n, i), token(i), !shared(i), text), "the other mode, leaf " + i + " of " + n);
                    TokenVerifier.Mode want = shared(i) ? TokenVerifier.Mode.SHARED : TokenVerifier.Mode.EXCLUSIVE;
                    assertEquals(want, verifier.mode(resource(n, i), token(i), text, false), "mode, leaf " + i + " of " + n);
                    assertEquals(want, verifier.mode(resource(n, i), token(i), text, true), "mode for a read, leaf " + i + " of " + n);
                    assertFalse(verifier.verifyGrant(resource(n, i), token(i) + 1, shared(i), text), "another token, leaf " + i + " of " + n);
                }
            }
        }
    }

    @Test
    void theSingleSignatureStillVerifies() throws Exception {
        byte[] msg = "fenceview/v1 single 7".getBytes(StandardCharsets.UTF_8);
        String sig = B64.encodeToString(sign(msg));
        assertEquals(86, sig.length());
        assertTrue(verifier.verify("single", 7, sig));
        assertFalse(verifier.verify("single", 8, sig));
    }

    /** Every way to bend a carrier, for each leaf of several batches: all refused. */
    @Test
    void tamperedCarriersAreRefused() throws Exception {
        for (int n : new int[] {2, 3, 5, 8, 13, 64, 70}) {
            List<byte[]> cs = carriers(n);
            for (int i = 0; i < n; i++) {
                Map<String, byte[]> bad = tampered(cs, n, i);
                for (Map.Entry<String, byte[]> e : bad.entrySet()) {
                    assertFalse(verify(n, i, e.getValue()), e.getKey() + ", leaf " + i + " of " + n);
                }
                assertTrue(verify(n, i, cs.get(i)), "the honest carrier, leaf " + i + " of " + n);
            }
        }
        // A batch of one has an empty path: one hash more is refused.
        byte[] one = carriers(1).get(0);
        assertFalse(verify(1, 0, Arrays.copyOf(one, one.length + 32)));
    }

    private static Map<String, byte[]> tampered(List<byte[]> cs, int n, int i) {
        byte[] c = cs.get(i);
        Map<String, byte[]> bad = new LinkedHashMap<>();
        byte[] flipped = c.clone();
        flipped[TokenVerifier.BATCH_HEADER + 5] ^= 0x01;
        bad.put("a flipped path byte", flipped);
        byte[] lastFlipped = c.clone();
        lastFlipped[c.length - 1] ^= (byte) 0x80;
        bad.put("a flipped byte of the last hash", lastFlipped);
        byte[] sigFlipped = c.clone();
        sigFlipped[10] ^= 0x01;
        bad.put("a flipped signature byte", sigFlipped);
        byte[] otherIndex = c.clone();
        ByteBuffer.wrap(otherIndex).putInt(65, (i + 1) % n);
        bad.put("another index", otherIndex);
        // Leaf 0 of 3 and of 4 can share a path and a root: the key signs the size
        // with the root, so no other size verifies.
        for (int size = Math.max(i + 1, n - 3); size <= n + 3; size++) {
            if (size != n) {
                byte[] otherSize = c.clone();
                ByteBuffer.wrap(otherSize).putInt(69, size);
                bad.put("size " + size, otherSize);
            }
        }
        byte[] noSize = c.clone();
        ByteBuffer.wrap(noSize).putInt(69, 0);
        bad.put("size 0", noSize);
        byte[] indexOut = c.clone();
        ByteBuffer.wrap(indexOut).putInt(65, n);
        bad.put("index past the size", indexOut);
        bad.put("a path one hash short", Arrays.copyOf(c, c.length - 32));
        bad.put("a path one hash long", Arrays.copyOf(c, c.length + 32));
        bad.put("a path not of whole hashes", Arrays.copyOf(c, c.length - 1));
        bad.put("a sibling's proof", cs.get((i ^ 1) < n ? i ^ 1 : i - 1));
        byte[] version = c.clone();
        version[0] = 0x03;
        bad.put("another version byte", version);
        byte[] old = c.clone();
        old[0] = 0x01;
        bad.put("the version whose signature did not cover the size", old);
        bad.put("the signature alone", Arrays.copyOfRange(c, 1, 65));
        return bad;
    }

    @Test
    void carrierTextIsStrict() throws Exception {
        byte[] c = carriers(5).get(3);
        String text = B64.encodeToString(c);
        assertTrue(verifier.verify(resource(5, 3), token(3), text));
        assertFalse(verifier.verify(resource(5, 3), token(3), text + "="));
        assertFalse(verifier.verify(resource(5, 3), token(3), Base64.getEncoder().withoutPadding().encodeToString(c))
                && !text.matches("[A-Za-z0-9]*"), "the standard alphabet");
        assertFalse(verifier.verify(resource(5, 3), token(3), "A".repeat(TokenVerifier.MAX_CARRIER_TEXT + 1)));
        assertFalse(verifier.verify(resource(5, 3), token(3), text.substring(0, text.length() - 1)));
    }

    /** What a test does with a guard in signed mode in front of a service at uri. */
    private interface GuardedService {
        void run(FencingFilter guard, HttpClient http, URI uri) throws Exception;
    }

    /** Runs test against a service at /w answering 204 behind a guard in signed mode, on a loopback port. */
    private static void withGuardedService(GuardedService test) throws Exception {
        FencingFilter guard = new FencingFilter(verifier, 100);
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/w", ex -> {
            ex.sendResponseHeaders(204, -1);
            ex.close();
        }).getFilters().add(guard);
        server.start();
        try {
            test.run(guard, HttpClient.newHttpClient(), URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/w"));
        } finally {
            server.stop(0);
        }
    }

    /** A guard in signed mode refuses every tampered carrier without moving its mark, then takes the honest one. */
    @Test
    void theGuardsMarkDoesNotMoveForTamperedCarriers() throws Exception {
        withGuardedService((guard, http, uri) -> {
            int n = 13;
            List<byte[]> cs = carriers(n);
            for (int i : new int[] {0, 6, 12}) {
                FencingToken honest = new FencingToken(resource(n, i), token(i), B64.encodeToString(cs.get(i)), "", "", "");
                for (Map.Entry<String, byte[]> e : tampered(cs, n, i).entrySet()) {
                    FencingToken forged = new FencingToken(honest.resource(), honest.number(), B64.encodeToString(e.getValue()), "", "", "");
                    var r = FencedHttp.send(http, HttpRequest.newBuilder(uri), forged, HttpResponse.BodyHandlers.ofString());
                    assertEquals(Decision.BAD_SIGNATURE, r.decision().reason(), e.getKey());
                    assertEquals(0, guard.highWaterMark(honest.resource()), e.getKey() + " moved the mark");
                }
                assertTrue(FencedHttp.send(http, HttpRequest.newBuilder(uri), honest, HttpResponse.BodyHandlers.discarding()).accepted());
                assertEquals(honest.number(), guard.highWaterMark(honest.resource()));
            }
        });
    }

    /**
     * A reader's token: refused for a write ({@code shared-token}, the mark unmoved),
     * accepted for a read (GET, or {@code X-Fencing-Access: read}) by the same rule.
     */
    @Test
    void aSharedTokenReadsButDoesNotWrite() throws Exception {
        withGuardedService((guard, http, uri) -> {
            int n = 8;
            List<byte[]> cs = carriers(n);
            int i = 4; // shared(4)
            FencingToken reader = new FencingToken(resource(n, i), token(i), B64.encodeToString(cs.get(i)), "", "", "", true);
            FencingToken asWriter = new FencingToken(reader.resource(), reader.number(), reader.signature(), "", "", "");
            var post = HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.noBody());
            var w = FencedHttp.send(http, post, asWriter, HttpResponse.BodyHandlers.ofString());
            assertEquals(Decision.SHARED_TOKEN, w.decision().reason());
            assertEquals(0, guard.highWaterMark(reader.resource()), "a refused write moved the mark");
            // The reader's own token says read: the POST is checked as a read.
            assertTrue(FencedHttp.send(http, HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.noBody()), reader,
                    HttpResponse.BodyHandlers.discarding()).accepted());
            assertEquals(reader.number(), guard.highWaterMark(reader.resource()));
            assertTrue(FencedHttp.send(http, HttpRequest.newBuilder(uri), asWriter, HttpResponse.BodyHandlers.discarding()).accepted(),
                    "a GET is a read");
        });
    }
}
