package io.fenceview;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The JDBC guard on real PostgreSQL, MariaDB and SQLite, with tokens from a real server. */
class JdbcGuardTest {
    static Connection connect(String db) throws SQLException {
        switch (db) {
            case "postgresql":
                return DriverManager.getConnection(Env.prop("postgres"));
            case "mariadb":
                return mariadb("");
            case "sqlite":
                return DriverManager.getConnection("jdbc:sqlite:" + Env.prop("tmp") + "/fenceview-java.db");
            default:
                throw new IllegalArgumentException(db);
        }
    }

    static Connection mariadb(String params) throws SQLException {
        String base = Env.prop("mariadb");
        try (Connection c = DriverManager.getConnection(base + "?user=root"); Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE IF NOT EXISTS fenceview_java");
        }
        return DriverManager.getConnection(base + "fenceview_java?user=root" + params);
    }

    /** A new inventory table with one product row, 42, stock 10, mark 0. */
    static String inventory(Connection c) throws SQLException {
        String t = "inventory_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
        try (Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + t + " (product_id BIGINT PRIMARY KEY, stock INT NOT NULL,"
                    + " fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)");
            s.execute("INSERT INTO " + t + " (product_id, stock) VALUES (42, 10)");
        }
        return t;
    }

    static long[] row(Connection c, String t) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT stock, fence_token, version FROM " + t + " WHERE product_id = 42")) {
            assertTrue(rs.next());
            return new long[] {rs.getLong(1), rs.getLong(2), rs.getLong(3)};
        }
    }

    /**
     * Seed 001's story: A holds the lock, pauses past its lease, B takes the lock
     * with a newer token and writes; A wakes and writes with its old token: the
     * update matches no row and the guard refuses it, naming B's token.
     */
    /**
     * clients/java/README.md's inventory example, as written, with the worker's lease
     * lost in the middle: the refusal is reported with the token's signature and
     * thrown, and the unlock in its finally neither throws nor hides it.
     */
    @Test
    void readmeExampleSurvivesALostLease() throws Exception {
        String r = Env.resource("inventory:42");
        // fv.report needs a key with the guard or admin role.
        try (FenceviewClient fv = FenceviewClient.builder().url(Env.url()).apiKey(Env.prop("admin")).build();
                Connection db = connect("sqlite"); FenceviewClient other = Env.client()) {
            String table = inventory(db);
            FencedLock lock = fv.getFencedLock(r);
            Long token = lock.tryLockAndGetToken(10, -1, TimeUnit.SECONDS);
            assertNotNull(token);
            FencedOutException e = assertThrows(FencedOutException.class, () -> {
                try {
                    // Meanwhile: the lease is force-expired (the watchdog may or may
                    // not have noticed yet), and a newer holder writes.
                    assertTrue(fv.getFencedLock(r).forceUnlock());
                    FencedLock theirs = other.getFencedLock(r);
                    theirs.lockAndGetToken();
                    assertTrue(JdbcGuard.create(other).update(db, table, "product_id", 42, theirs.getFencingToken(), Map.of("stock", 5)).accepted());

                    int stock = 10 - 3;
                    Decision d = JdbcGuard.create(fv).update(db, table, "product_id", 42, lock.getFencingToken(),
                            Map.of("stock", stock));
                    if (!d.accepted()) {
                        fv.report(r, d, "stock-worker", lock.getFencingToken().signature());
                        throw d.toException(r);
                    }
                } finally {
                    lock.unlock();
                }
            });
            assertEquals(token.longValue(), e.token());
            assertEquals(5, row(db, table)[0], "the newer holder's write stands");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb", "sqlite"})
    void pausedHolderIsFencedOut(String db) throws Exception {
        String r = Env.resource("inventory-42");
        JdbcGuard guard = JdbcGuard.acceptingUnsignedTokens();
        try (Connection conn = connect(db); FenceviewClient a = Env.client(); FenceviewClient b = Env.client()) {
            String t = inventory(conn);
            // A takes the lock for 300 ms and then "pauses": it never renews.
            Long tokenA = a.getFencedLock(r).tryLockAndGetToken(0, 300, TimeUnit.MILLISECONDS);
            assertNotNull(tokenA);
            // B waits on the server until A's lease has run out.
            FencedLock lockB = b.getFencedLock(r);
            Long tokenB = lockB.tryLockAndGetToken(10, TimeUnit.SECONDS);
            assertNotNull(tokenB, "B got the lock once A's lease ran out");
            assertTrue(tokenB > tokenA);
            Decision db1 = guard.update(conn, t, "product_id", 42, tokenB, Map.of("stock", 5));
            assertTrue(db1.accepted(), "B's write: " + db1);
            // Equal tokens pass: B may write again under the same grant, even the same values.
            assertTrue(guard.update(conn, t, "product_id", 42, tokenB, Map.of("stock", 5)).accepted());

            // A wakes up and writes as if it still held the lock.
            Decision da = guard.update(conn, t, "product_id", 42, tokenA, Map.of("stock", 7));
            assertFalse(da.accepted(), "A's write is refused");
            assertEquals(Decision.STALE_TOKEN, da.reason());
            assertEquals(tokenA.longValue(), da.presented());
            assertEquals(tokenB.longValue(), da.required(), "the refusal names the mark that beat it");
            long[] now = row(conn, t);
            assertEquals(5, now[0], "B's stock stands");
            assertEquals(tokenB.longValue(), now[1]);
            FencedOutException e = da.toException(r);
            assertEquals(da, e.decision());
            FencingException stop = e;
            assertEquals(r, stop.resource());
            assertEquals(tokenA.longValue(), stop.token(), "the refused token, as a lost lease names its own");
            lockB.unlock();

            // The refusal, reported, lands in the server's rejection history.
            try (FenceviewClient admin = FenceviewClient.builder().url(Env.url()).apiKey(Env.prop("admin")).build()) {
                admin.report(r, da, "java-jdbc-" + db, "");
            }
            var rej = Env.admin("GET", "/v1/rejections?resource=" + FenceviewClient.segment(r)).getValue();
            List<Object> list = Json.list(rej, "rejections");
            assertEquals(1, list.size(), "rejections: " + rej);
            @SuppressWarnings("unchecked")
            Map<String, Object> one = (Map<String, Object>) list.get(0);
            assertEquals(tokenA, one.get("presented"));
            // The server names the reporting key before the source.
            assertTrue(((String) one.get("source")).endsWith("java-jdbc-" + db), "source: " + one.get("source"));
        }
    }

    /**
     * A guard made from the client takes only tokens the server signed: a forged
     * number, a real signature on another number or resource, an unsigned token and a
     * bare long are all refused with bad-signature, the row untouched; the honest
     * holder keeps writing.
     */
    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "sqlite"})
    void forgedTokensAreRefusedAndTheHolderKeepsWriting(String db) throws Exception {
        String r = Env.resource("inventory-signed");
        try (Connection conn = connect(db); FenceviewClient fv = Env.client()) {
            JdbcGuard guard = JdbcGuard.create(fv);
            assertTrue(guard.verifiesSignatures());
            String t = inventory(conn);
            FencedLock lock = fv.getFencedLock(r);
            lock.lock();
            FencingToken honest = lock.getFencingToken();
            assertTrue(guard.update(conn, t, "product_id", 42, honest, Map.of("stock", 9)).accepted());
            FencedLock elsewhere = fv.getFencedLock(r + "-elsewhere");
            elsewhere.lock();
            FencingToken theirs = elsewhere.getFencingToken();
            elsewhere.unlock();
            long high = honest.number() + 1000;
            Map<String, FencingToken> forged = Map.of(
                    "a higher number with the holder's signature", new FencingToken(r, high, honest.signature(), honest.keyId(), "", ""),
                    "unsigned", new FencingToken(r, high, "", "", "", ""),
                    "another resource's signature", new FencingToken(r, theirs.number(), theirs.signature(), theirs.keyId(), "", ""));
            for (Map.Entry<String, FencingToken> e : forged.entrySet()) {
                Decision d = guard.update(conn, t, "product_id", 42, e.getValue(), Map.of("stock", 0));
                assertEquals(new Decision(false, Decision.BAD_SIGNATURE, e.getValue().number(), 0), d, e.getKey());
                assertFalse(guard.updateVersion(conn, t, "product_id", 42, e.getValue(), 0, Map.of("stock", 0)).accepted(), e.getKey());
            }
            assertEquals(Decision.BAD_SIGNATURE, guard.update(conn, t, "product_id", 42, high, Map.of("stock", 0)).reason(), "a bare number");
            assertEquals(List.of(9L, honest.number()), List.of(row(conn, t)[0], row(conn, t)[1]), "nothing was written, the mark did not move");
            assertTrue(guard.update(conn, t, "product_id", 42, honest, Map.of("stock", 8)).accepted(), "the holder keeps writing");
            assertEquals(8, row(conn, t)[0]);
            lock.unlock();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"postgresql", "mariadb", "sqlite"})
    void versionVariant(String db) throws Exception {
        JdbcGuard guard = JdbcGuard.acceptingUnsignedTokens();
        try (Connection conn = connect(db)) {
            String t = inventory(conn);
            assertTrue(guard.updateVersion(conn, t, "product_id", 42, 5, 0, Map.of("stock", 9)).accepted());
            assertEquals(1, row(conn, t)[2], "the write bumps the version");
            JdbcGuard.VersionConflictException vc = assertThrows(JdbcGuard.VersionConflictException.class,
                    () -> guard.updateVersion(conn, t, "product_id", 42, 5, 0, Map.of("stock", 8)));
            assertEquals(0, vc.expected());
            assertEquals(1, vc.current());
            // Stale token and wrong version: the stale token wins (stop, don't retry).
            Decision d = guard.updateVersion(conn, t, "product_id", 42, 4, 0, Map.of("stock", 1));
            assertFalse(d.accepted());
            assertEquals(5, d.required());
            assertTrue(guard.updateVersion(conn, t, "product_id", 42, 6, 1, Map.of("stock", 8)).accepted());
            assertEquals(List.of(8L, 6L, 2L), List.of(row(conn, t)[0], row(conn, t)[1], row(conn, t)[2]));
            assertThrows(JdbcGuard.RowNotFoundException.class, () -> guard.update(conn, t, "product_id", 43, 9, Map.of("stock", 1)));
        }
    }

    @Test
    void identifiersAreCheckedAndValuesBound() throws Exception {
        JdbcGuard guard = JdbcGuard.acceptingUnsignedTokens();
        try (Connection conn = connect("postgresql")) {
            String t = inventory(conn);
            for (String bad : List.of("inv; DROP TABLE x", "a.b.c", "", "1abc", "inv\"", "x".repeat(64))) {
                assertThrows(IllegalArgumentException.class, () -> guard.update(conn, bad, "product_id", 42, 1, Map.of("stock", 1)), bad);
                assertThrows(IllegalArgumentException.class, () -> guard.update(conn, t, "product_id", 42, 1, Map.of(bad, 1)), bad);
            }
            assertThrows(IllegalArgumentException.class, () -> guard.update(conn, t, "product_id", 42, 1, Map.of("fence_token", 99)));
            assertThrows(InvalidRequestException.class, () -> guard.update(conn, t, "product_id", 42, 0, Map.of("stock", 1)));
            assertThrows(InvalidRequestException.class, () -> guard.update(conn, t, "product_id", 42, -3, Map.of("stock", 1)));
            assertEquals(List.of(10L, 0L), List.of(row(conn, t)[0], row(conn, t)[1]), "nothing was written");
            // A hostile value is only ever a value; a schema-qualified table works.
            assertThrows(SQLException.class, () -> guard.update(conn, t, "product_id", 42, 1, Map.of("stock", "1; DROP TABLE " + t)));
            assertTrue(guard.update(conn, "public." + t, "product_id", 42, 2, Map.of("stock", 3)).accepted());
            assertEquals(3, row(conn, t)[0]);
        }
    }

    /**
     * MySQL's pitfall: a connection that counts changed rows only (MariaDB's
     * useAffectedRows=true) reports 0 for a repeated write of the same values, which
     * would read as a refusal. The guard notices instead of answering wrongly.
     */
    @Test
    void mysqlConnectionCountingChangedRowsOnlyIsCaught() throws Exception {
        JdbcGuard guard = JdbcGuard.acceptingUnsignedTokens().withDialect(JdbcGuard.Dialect.MYSQL);
        try (Connection conn = mariadb("&useAffectedRows=true")) {
            String t = inventory(conn);
            assertTrue(guard.update(conn, t, "product_id", 42, 3, Map.of("stock", 4)).accepted());
            assertThrows(JdbcGuard.FoundRowsRequiredException.class, () -> guard.update(conn, t, "product_id", 42, 3, Map.of("stock", 4)));
            // A real refusal is still one.
            assertFalse(guard.update(conn, t, "product_id", 42, 2, Map.of("stock", 4)).accepted());
        }
        assertEquals(JdbcGuard.Dialect.MYSQL, JdbcGuard.Dialect.of(mariadb("")));
    }
}
