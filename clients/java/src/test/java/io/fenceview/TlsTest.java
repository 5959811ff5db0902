package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.Test;

/** A fenceview server on HTTPS with a private certificate, reached through the builder's SSLContext. */
class TlsTest {
    static SSLContext trusting(Path pem) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        try (InputStream in = Files.newInputStream(pem)) {
            ks.setCertificateEntry("fenceview", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }

    @Test
    void privateCertificateThroughSslContext() throws Exception {
        String url = Env.prop("tls.url");
        assertTrue(url.startsWith("https://"), url);
        String r = Env.resource("tls");
        try (FenceviewClient c = FenceviewClient.builder().url(url).sslContext(trusting(Path.of(Env.prop("tls.ca")))).build()) {
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
