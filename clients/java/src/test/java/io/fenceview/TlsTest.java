package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import javax.net.ssl.SSLHandshakeException;
import org.junit.jupiter.api.Test;

/** A fenceview server on HTTPS with a private certificate, reached through the builder's SSLContext. */
class TlsTest {
    @Test
    void privateCertificateThroughSslContext() throws Exception {
        String url = Env.prop("tls.url");
        assertTrue(url.startsWith("https://"), url);
        String r = Env.resource("tls");
        try (FenceviewClient c = FenceviewClient.builder().url(url).sslContext(PrivateCa.trusting(Path.of(Env.prop("tls.ca")))).build()) {
            FencedLock lock = c.getFencedLock(r);
            Long token = lock.tryLockAndGetToken();
            assertNotNull(token);
            assertEquals(token, lock.getToken());
            lock.unlock();
        }
        // Without it the JDK's trust store does not know the certificate: no call gets through.
        try (FenceviewClient c = FenceviewClient.create(url)) {
            FenceviewException e = assertThrows(FenceviewException.class, () -> c.getFencedLock(r).tryLock());
            assertEquals(0, e.status());
            Throwable cause = e.getCause();
            while (cause != null && !(cause instanceof SSLHandshakeException)) {
                cause = cause.getCause();
            }
            assertNotNull(cause, "the handshake failed: " + e);
        }
    }
}
