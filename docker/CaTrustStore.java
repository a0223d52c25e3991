// Run as a single-file program by docker/ca-truststore.sh: java CaTrustStore.java BUNDLE.pem OUT.p12
// writes the JDK's default trust store plus every certificate of BUNDLE.pem to OUT.p12
// (password "changeit") in one JVM start (keytool would take one per certificate).
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;

public class CaTrustStore {
  public static void main(String[] args) throws Exception {
    char[] password = "changeit".toCharArray();
    KeyStore store = KeyStore.getInstance("PKCS12");
    store.load(null, password);
    Path defaults = Path.of(System.getProperty("java.home"), "lib", "security", "cacerts");
    KeyStore jdk = KeyStore.getInstance(KeyStore.getDefaultType());
    try (FileInputStream in = new FileInputStream(defaults.toFile())) {
      jdk.load(in, null);
    }
    for (String alias : java.util.Collections.list(jdk.aliases())) {
      if (jdk.isCertificateEntry(alias)) {
        store.setCertificateEntry(alias, jdk.getCertificate(alias));
      }
    }
    int added = 0;
    try (FileInputStream in = new FileInputStream(args[0])) {
      for (Certificate cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
        store.setCertificateEntry("ca-bundle-" + added++, cert);
      }
    }
    try (FileOutputStream out = new FileOutputStream(args[1])) {
      store.store(out, password);
    }
    System.err.println("CaTrustStore: " + store.size() + " certificates (" + added + " from " + args[0] + ")");
  }
}
