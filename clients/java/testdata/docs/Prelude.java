package docs;

import com.sun.net.httpserver.HttpHandler;
import com.sun.net.httpserver.HttpServer;
import io.fenceview.FencedLock;
import io.fenceview.FenceviewClient;
import io.fenceview.FencingFilter;
import io.fenceview.PrivateCa;
import java.net.InetSocketAddress;
import java.net.http.HttpClient;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import javax.net.ssl.SSLContext;

/**
 * The names the Java blocks of README.md and clients/java/README.md use without
 * declaring them, as their prose does. A block sees them through {@code import static
 * docs.Prelude.*}, so its own declarations shadow them. TestJavaDocBlocksRun gives the
 * values through system properties and the environment (FENCEVIEW_KEY, which the
 * docs read).
 */
public final class Prelude {
    private Prelude() {}

    /** A client of the real server, with the client key. */
    public static FenceviewClient fv;
    /** The client key's secret (FENCEVIEW_KEY), and the admin token. */
    public static String key, secret, adminSecret;
    /** A lock of fv, held by the block's thread; its resource, token and signature. */
    public static FencedLock lock;
    public static String resource, signature;
    public static long token;
    /** A SQLite database with inventory(product_id, stock, fence_token) and product 42 at stock 100. */
    public static String jdbcUrl;
    public static Connection conn;
    /** A service on the JDK's HTTP server, and its address (the docs' http://ledger): "/" is guarded. */
    public static HttpServer server;
    public static String ledger;
    /** A handler that answers 204, an HTTP client and a request body. */
    public static HttpHandler handler;
    public static HttpClient http;
    public static String body = "{\"product\":42,\"stock\":7}";
    /** An SSLContext that trusts the TLS server's private CA (the docs' own CA). */
    public static SSLContext myContext;

    /** Gives every name its value; called before the block. */
    public static void start() throws Exception {
        key = System.getenv("FENCEVIEW_KEY");
        secret = key;
        adminSecret = System.getProperty("fenceview.admin");
        fv = FenceviewClient.builder().url(System.getProperty("fenceview.url")).apiKey(key).build();
        lock = fv.getFencedLock("docs:java");
        lock.lock();
        resource = lock.getFencingToken().resource();
        token = lock.getFencingToken().number();
        signature = lock.getFencingToken().signature();

        jdbcUrl = "jdbc:sqlite:" + System.getProperty("fenceview.db");
        conn = DriverManager.getConnection(jdbcUrl);
        try (Statement s = conn.createStatement()) {
            s.executeUpdate("CREATE TABLE inventory (product_id INTEGER PRIMARY KEY, stock INTEGER NOT NULL,"
                    + " fence_token BIGINT NOT NULL DEFAULT 0)");
            s.executeUpdate("INSERT INTO inventory (product_id, stock) VALUES (42, 100)");
        }

        handler = ex -> {
            ex.getRequestBody().readAllBytes();
            ex.sendResponseHeaders(204, -1);
            ex.close();
        };
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", handler).getFilters().add(new FencingFilter(fv));
        server.start();
        ledger = "http://127.0.0.1:" + server.getAddress().getPort();
        http = HttpClient.newHttpClient();

        String ca = System.getProperty("fenceview.tls.ca");
        myContext = ca == null || ca.isEmpty() ? SSLContext.getDefault() : PrivateCa.trusting(Path.of(ca));
    }

    /**
     * Releases the prelude's lock, after a failed block too (so the next block need not
     * wait out its lease), and ends the program with status (0: the block ran).
     */
    public static void end(int status) {
        try {
            if (lock != null && lock.isHeldByCurrentThread()) {
                lock.unlock();
            }
        } catch (RuntimeException e) {
            e.printStackTrace();
            status = 1;
        }
        if (server != null) {
            server.stop(0);
        }
        if (status == 0) {
            System.out.println("block ran");
        }
        System.exit(status);
    }

    /** Ends the program with status 1 when a block did not do what its prose says. */
    public static void expect(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError("the block did not do what the docs say: " + what);
        }
    }

    /** The docs' "your own query": product id's stock. */
    public static int readStock(Connection db, long id) throws SQLException {
        return (int) column(db, "stock", id);
    }

    /** The row's fence token: the highest token it accepted. */
    public static long fenceToken(Connection db, long id) throws SQLException {
        return column(db, "fence_token", id);
    }

    private static long column(Connection db, String column, long id) throws SQLException {
        try (PreparedStatement q = db.prepareStatement("SELECT " + column + " FROM inventory WHERE product_id = ?")) {
            q.setLong(1, id);
            try (ResultSet rs = q.executeQuery()) {
                if (!rs.next()) {
                    throw new SQLException("no product " + id);
                }
                return rs.getLong(1);
            }
        }
    }
}
