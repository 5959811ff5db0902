package io.fenceview;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The test servers' private CA. Public, and free of JUnit, because the docs' prelude
 * (testdata/docs/Prelude.java, compiled with the library only) trusts it too.
 */
public final class PrivateCa {
    private PrivateCa() {}

    /** An SSLContext that trusts the certificate in the PEM file, and nothing else. */
    public static SSLContext trusting(Path pem) throws Exception {
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
}
