package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** FencedHttp calling a com.sun.net.httpserver service guarded by FencingFilter, with real tokens. */
class HttpCarrierTest {
    private HttpServer server;
    private FencingFilter plain;
    private FencingFilter signed;
    private FencingFilter byDefault;
    private FenceviewClient c;
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeEach
    void setUp() throws Exception {
        c = Env.client();
        plain = FencingFilter.acceptingUnsignedTokens();
        signed = new FencingFilter(TokenVerifier.fetch(c, Duration.ofHours(1)), 1);
        byDefault = new FencingFilter(c);
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        for (var ctx : new Object[][] {{"/apply", plain}, {"/signed", signed}, {"/default", byDefault}}) {
            server.createContext((String) ctx[0], ex -> {
                byte[] b = ("applied " + ex.getAttribute(FencingFilter.TOKEN_ATTRIBUTE)).getBytes(StandardCharsets.UTF_8);
                ex.sendResponseHeaders(200, b.length);
                ex.getResponseBody().write(b);
                ex.close();
            }).getFilters().add((FencingFilter) ctx[1]);
        }
        server.start();
    }

    @AfterEach
    void tearDown() {
        server.stop(0);
        c.close();
    }

    private URI uri(String path) {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + path);
    }

    private FencingToken grant(String r) {
        FencedLock lock = c.getFencedLock(r);
        lock.lock();
        FencingToken t = lock.getFencingToken();
        lock.unlock();
        return t;
    }

    @Test
    void staleTokenIsRefusedWithTheRequiredOne() throws Exception {
        String r = Env.resource("http");
        FencingToken older = grant(r);
        FencingToken newer = grant(r);
        var ok = FencedHttp.send(http, HttpRequest.newBuilder(uri("/apply")).POST(HttpRequest.BodyPublishers.ofString("x")),
                newer, HttpResponse.BodyHandlers.ofString());
        assertTrue(ok.accepted());
        assertEquals("applied " + newer.number(), ok.response().body());
        var stale = FencedHttp.send(http, HttpRequest.newBuilder(uri("/apply")).POST(HttpRequest.BodyPublishers.ofString("x")),
                older, HttpResponse.BodyHandlers.ofString());
        assertFalse(stale.accepted());
        assertEquals(409, stale.response().statusCode());
        assertEquals(new Decision(false, Decision.STALE_TOKEN, older.number(), newer.number()), stale.decision());
        assertEquals(newer.number(), plain.highWaterMark(r));
        // The same token again is fine: one holder, many writes.
        assertTrue(FencedHttp.send(http, HttpRequest.newBuilder(uri("/apply")), newer, HttpResponse.BodyHandlers.ofString()).accepted());
    }

    @Test
    void malformedTokensAre400AndChangeNothing() throws Exception {
        String r = Env.resource("http-bad");
        for (String bad : new String[] {"007", "-1", "0", "1.5", "abc", "9223372036854775808", "+5"}) {
            HttpResponse<String> resp = http.send(HttpRequest.newBuilder(uri("/apply")).header(FencingToken.TOKEN_HEADER, bad)
                    .header(FencedHttp.RESOURCE_HEADER, r).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(400, resp.statusCode(), bad);
            assertTrue(resp.body().contains("\"error\""), resp.body());
        }
        HttpResponse<String> noResource = http.send(HttpRequest.newBuilder(uri("/apply")).header(FencingToken.TOKEN_HEADER, "5").build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(400, noResource.statusCode());
        assertEquals(0, plain.highWaterMark(r));
    }

    @Test
    void signedModeRefusesForgedSignaturesWithoutRaisingTheMark() throws Exception {
        String r = Env.resource("http-signed");
        FencingToken real = grant(r);
        FencingToken forged = new FencingToken(r, real.number() + 1000, real.signature(), real.keyId(), real.issuer(), real.scope());
        var refused = FencedHttp.send(http, HttpRequest.newBuilder(uri("/signed")), forged, HttpResponse.BodyHandlers.ofString());
        assertFalse(refused.accepted());
        assertEquals(Decision.BAD_SIGNATURE, refused.decision().reason());
        assertEquals(0, signed.highWaterMark(r), "a forged token never raises the mark");
        var unsigned = new FencingToken(r, real.number(), "", "", "", "");
        assertEquals(Decision.BAD_SIGNATURE,
                FencedHttp.send(http, HttpRequest.newBuilder(uri("/signed")), unsigned, HttpResponse.BodyHandlers.ofString()).decision().reason());
        assertTrue(FencedHttp.send(http, HttpRequest.newBuilder(uri("/signed")), real, HttpResponse.BodyHandlers.ofString()).accepted());
        assertEquals(real.number(), signed.highWaterMark(r));
        // The signed filter holds marks for one resource only: the next is 503.
        FencingToken elsewhere = grant(Env.resource("http-signed-2"));
        assertEquals(503, FencedHttp.send(http, HttpRequest.newBuilder(uri("/signed")), elsewhere,
                HttpResponse.BodyHandlers.ofString()).response().statusCode());
    }

    /**
     * A filter made from the client verifies by default: a forged X-Fencing-Token: 99
     * (no signature, or the holder's signature on another number) is refused and moves
     * no mark; the honest holder keeps writing.
     */
    @Test
    void theFilterFromTheClientRefusesForgedTokens() throws Exception {
        String r = Env.resource("http-default");
        assertTrue(byDefault.verifiesSignatures());
        assertFalse(plain.verifiesSignatures());
        FencedLock lock = c.getFencedLock(r);
        lock.lock();
        FencingToken honest = lock.getFencingToken();
        assertTrue(FencedHttp.send(http, HttpRequest.newBuilder(uri("/default")), honest, HttpResponse.BodyHandlers.ofString()).accepted());
        HttpResponse<String> bare = http.send(HttpRequest.newBuilder(uri("/default")).header(FencingToken.TOKEN_HEADER, "99")
                .header(FencedHttp.RESOURCE_HEADER, r).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(409, bare.statusCode(), bare.body());
        assertEquals(Decision.BAD_SIGNATURE, Json.str(Json.parseObject(bare.body()), "reason"));
        FencingToken reused = new FencingToken(r, honest.number() + 99, honest.signature(), honest.keyId(), "", "");
        assertEquals(Decision.BAD_SIGNATURE,
                FencedHttp.send(http, HttpRequest.newBuilder(uri("/default")), reused, HttpResponse.BodyHandlers.ofString()).decision().reason());
        assertEquals(honest.number(), byDefault.highWaterMark(r), "no forgery moved the mark");
        assertTrue(FencedHttp.send(http, HttpRequest.newBuilder(uri("/default")), honest, HttpResponse.BodyHandlers.ofString()).accepted(),
                "the honest holder keeps writing");
        lock.unlock();
    }
}
