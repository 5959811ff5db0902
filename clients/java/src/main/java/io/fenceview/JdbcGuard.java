package io.fenceview;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Fences writes to rows of a relational database: each row keeps its own high-water
 * mark in a token column ({@code fence_token BIGINT NOT NULL DEFAULT 0} by default),
 * and every write is the one conditional statement
 *
 * <pre>
 * UPDATE inventory SET stock = ?, fence_token = ?
 *  WHERE product_id = ? AND fence_token &lt;= ?
 * </pre>
 *
 * so checking the token and writing are one atomic step in the database. A refused
 * write matches no row; only then is the row's mark read, to explain the refusal
 * with the mark that actually beat the token.
 *
 * <p>A guard made from a client ({@link #create(FenceviewClient)}) or a
 * {@link TokenVerifier} takes only tokens the server signed: a token without a valid
 * signature (a bare number, a forgery) is refused with {@code bad-signature} before the
 * database is touched, so it can neither write nor raise the mark. Only
 * {@link #acceptingUnsignedTokens()} takes bare numbers.
 *
 * <p>Table and column names must be plain identifiers (letters, digits, {@code _};
 * the table may be schema-qualified) and are quoted; values are always bound. The
 * guard never commits or rolls back: pass a connection inside your transaction to
 * make the fenced write part of it. Immutable and safe for concurrent use.
 */
public final class JdbcGuard {
    /** The SQL flavour: how identifiers are quoted and what the driver counts as affected. */
    public enum Dialect {
        POSTGRESQL, MYSQL, SQLITE;

        /** The dialect of a connection, from its driver's product name. */
        public static Dialect of(Connection conn) throws SQLException {
            String name = conn.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT);
            if (name.contains("postgres")) {
                return POSTGRESQL;
            }
            if (name.contains("mysql") || name.contains("mariadb")) {
                return MYSQL;
            }
            if (name.contains("sqlite")) {
                return SQLITE;
            }
            throw new SQLException("fenceview: no JdbcGuard dialect for database " + name);
        }

        String quote(String part) {
            return this == MYSQL ? "`" + part + "`" : "\"" + part + "\"";
        }
    }

    /** The longest identifier part: PostgreSQL's NAMEDATALEN-1. */
    static final int MAX_IDENT = 63;

    private final TokenVerifier verifier; // null: unsigned tokens accepted
    private final Dialect dialect; // null: from each connection
    private final String tokenColumn;
    private final String versionColumn;

    private JdbcGuard(TokenVerifier verifier, Dialect dialect, String tokenColumn, String versionColumn) {
        this.verifier = verifier;
        this.dialect = dialect;
        this.tokenColumn = ident(tokenColumn);
        this.versionColumn = ident(versionColumn);
    }

    /**
     * A guard that takes only tokens signed by client's server: its signing keys are
     * fetched now ({@code GET /v1/signing-keys}) and again when a signature names a key
     * it does not know yet. The dialect is read from each connection's metadata.
     */
    public static JdbcGuard create(FenceviewClient client) {
        return create(TokenVerifier.fetch(Objects.requireNonNull(client, "client")));
    }

    /** A guard that takes only tokens verifier vouches for. */
    public static JdbcGuard create(TokenVerifier verifier) {
        return new JdbcGuard(Objects.requireNonNull(verifier, "verifier"), null, "fence_token", "version");
    }

    /**
     * A guard that takes any token number, signed or not: whoever can call your code
     * with a high number locks the real holder out of the row. For tokens from a server
     * that does not sign, or a test. Use {@link #update(Connection, String, String, Object, long, Map)}.
     */
    public static JdbcGuard acceptingUnsignedTokens() {
        return new JdbcGuard(null, null, "fence_token", "version");
    }

    /** This guard with a fixed dialect instead of each connection's. */
    public JdbcGuard withDialect(Dialect d) {
        return new JdbcGuard(verifier, Objects.requireNonNull(d), tokenColumn, versionColumn);
    }

    /** This guard with the row's mark kept in column (default {@code fence_token}). */
    public JdbcGuard withTokenColumn(String column) {
        return new JdbcGuard(verifier, dialect, column, versionColumn);
    }

    /** This guard with the optimistic-locking version in column (default {@code version}). */
    public JdbcGuard withVersionColumn(String column) {
        return new JdbcGuard(verifier, dialect, tokenColumn, column);
    }

    /** Whether the guard refuses tokens without a valid signature (all but {@link #acceptingUnsignedTokens()}). */
    public boolean verifiesSignatures() {
        return verifier != null;
    }

    /**
     * Sets columns of the row whose idColumn is id, only if token is at least the row's
     * mark and (unless the guard accepts unsigned tokens) carries a valid signature, and
     * records token as the new mark, in one statement.
     *
     * @return accepted, or refused with reason {@code stale-token} and the row's mark, or
     *         {@code bad-signature} (required 0: the row was not read)
     * @throws RowNotFoundException       when no such row exists (create rows before fencing writes to them)
     * @throws FoundRowsRequiredException on a MySQL connection that counts changed rows only
     */
    public Decision update(Connection conn, String table, String idColumn, Object id, FencingToken token, Map<String, ?> set)
            throws SQLException {
        Decision refused = refusedSignature(token, false);
        if (refused != null) {
            return refused;
        }
        return write(conn, table, idColumn, id, token.number(), null, set);
    }

    /**
     * A guarded read of the row whose idColumn is id: the same rule as a write (token at
     * least the row's mark, which rises to it, in one statement) with nothing else set,
     * so a writer whose lease ran out cannot write once a later reader has read. A
     * shared lock's token (a reader's) is fit for it; run the read itself in the same
     * transaction, after this.
     *
     * @return accepted, or refused with {@code stale-token} and the row's mark, or
     *         {@code bad-signature}
     */
    public Decision read(Connection conn, String table, String idColumn, Object id, FencingToken token) throws SQLException {
        Decision refused = refusedSignature(token, true);
        if (refused != null) {
            return refused;
        }
        return write(conn, table, idColumn, id, token.number(), null, Map.of());
    }

    /**
     * The same with a bare token number, which carries no signature: only a guard that
     * {@linkplain #acceptingUnsignedTokens() accepts unsigned tokens} writes with it;
     * any other refuses it with {@code bad-signature}.
     */
    public Decision update(Connection conn, String table, String idColumn, Object id, long token, Map<String, ?> set)
            throws SQLException {
        if (verifier != null) {
            return new Decision(false, Decision.BAD_SIGNATURE, Ids.token(token), 0);
        }
        return write(conn, table, idColumn, id, token, null, set);
    }

    /** {@link #updateVersion(Connection, String, String, Object, long, long, Map)} with a signed token. */
    public Decision updateVersion(Connection conn, String table, String idColumn, Object id, FencingToken token, long expected,
            Map<String, ?> set) throws SQLException {
        Decision refused = refusedSignature(token, false);
        if (refused != null) {
            return refused;
        }
        return write(conn, table, idColumn, id, token.number(), expected, set);
    }

    /**
     * The refusal of a token whose signature does not fit (unless the guard accepts
     * unsigned tokens): {@code bad-signature} when no trusted key signed it,
     * {@code shared-token} for a write shown a shared grant's; null when it may be
     * compared.
     */
    private Decision refusedSignature(FencingToken token, boolean read) {
        Objects.requireNonNull(token, "token");
        if (verifier == null) {
            return null;
        }
        TokenVerifier.Mode m = verifier.mode(token.resource(), token.number(), token.signature(), read);
        if (m == TokenVerifier.Mode.UNSIGNED) {
            return new Decision(false, Decision.BAD_SIGNATURE, token.number(), 0);
        }
        if (m == TokenVerifier.Mode.SHARED && !read) {
            return new Decision(false, Decision.SHARED_TOKEN, token.number(), 0);
        }
        return null;
    }

    /**
     * {@link #update} combined with optimistic locking: the row must also be at version
     * expected, and the write increments it. When both fail the stale token wins (the
     * writer must stop); a version mismatch alone is a {@link VersionConflictException}
     * (re-read and retry with the same token).
     */
    public Decision updateVersion(Connection conn, String table, String idColumn, Object id, long token, long expected,
            Map<String, ?> set) throws SQLException {
        if (verifier != null) {
            return new Decision(false, Decision.BAD_SIGNATURE, Ids.token(token), 0);
        }
        return write(conn, table, idColumn, id, token, expected, set);
    }

    private Decision write(Connection conn, String table, String idColumn, Object id, long token, Long version,
            Map<String, ?> set) throws SQLException {
        Ids.token(token);
        Objects.requireNonNull(id, "row id");
        Objects.requireNonNull(set, "columns to set");
        Dialect d = dialect != null ? dialect : Dialect.of(conn);
        String t = quoteIdent(d, table, true);
        String idCol = quoteIdent(d, idColumn, false);
        String tokCol = d.quote(tokenColumn);
        String verCol = d.quote(versionColumn);

        StringBuilder sql = new StringBuilder("UPDATE ").append(t).append(" SET ");
        List<Object> vals = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        seen.add(tokenColumn.toLowerCase(Locale.ROOT));
        seen.add(ident(idColumn).toLowerCase(Locale.ROOT));
        if (version != null) {
            seen.add(versionColumn.toLowerCase(Locale.ROOT));
        }
        for (Map.Entry<String, ?> e : set.entrySet()) {
            String col = quoteIdent(d, e.getKey(), false);
            // Unquoted names fold case in every dialect: "Stock" and "stock" may be one column.
            if (!seen.add(e.getKey().toLowerCase(Locale.ROOT))) {
                throw new IllegalArgumentException("fenceview: column " + e.getKey() + " assigned twice or reserved for the guard");
            }
            sql.append(col).append(" = ?, ");
            vals.add(e.getValue());
        }
        if (version != null) {
            sql.append(verCol).append(" = ").append(verCol).append(" + 1, ");
        }
        sql.append(tokCol).append(" = ? WHERE ").append(idCol).append(" = ? AND ").append(tokCol).append(" <= ?");
        vals.add(token);
        vals.add(id);
        vals.add(token);
        if (version != null) {
            sql.append(" AND ").append(verCol).append(" = ?");
            vals.add(version);
        }
        int n;
        try (PreparedStatement ps = conn.prepareStatement(sql.toString())) {
            for (int k = 0; k < vals.size(); k++) {
                ps.setObject(k + 1, vals.get(k));
            }
            n = ps.executeUpdate();
        }
        if (n > 0) {
            return Decision.accept(token);
        }
        return refusal(conn, d, t, idCol, tokCol, verCol, table, id, token, version);
    }

    /** Explains an update that matched no row, reading the mark after the refusal. */
    private Decision refusal(Connection conn, Dialect d, String t, String idCol, String tokCol, String verCol,
            String table, Object id, long token, Long version) throws SQLException {
        String q = "SELECT " + tokCol + (version != null ? ", " + verCol : "") + " FROM " + t + " WHERE " + idCol + " = ?";
        long mark;
        long cur = 0;
        try (PreparedStatement ps = conn.prepareStatement(q)) {
            ps.setObject(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new RowNotFoundException(table, id);
                }
                mark = rs.getLong(1);
                if (version != null) {
                    cur = rs.getLong(2);
                }
            }
        }
        if (token < mark) {
            return Decision.stale(token, mark);
        }
        if (version != null && cur != version) {
            throw new VersionConflictException(version, cur);
        }
        if (d == Dialect.MYSQL) {
            // The likeliest cause on MySQL: a repeated write that changed nothing, on a
            // connection that counts changed rows only (useAffectedRows=true).
            try (PreparedStatement ps = conn.prepareStatement("UPDATE " + t + " SET " + tokCol + " = " + tokCol + " WHERE " + idCol + " = ?")) {
                ps.setObject(1, id);
                if (ps.executeUpdate() == 0) {
                    throw new FoundRowsRequiredException();
                }
            }
        }
        // The row accepts the token now but did not during the update: it changed in
        // between (deleted and re-created, its mark lowered by hand). Not a decision
        // this guard can make; the caller may retry.
        throw new SQLException("fenceview: update of " + table + " matched no row, yet the row now accepts token "
                + token + " (concurrent change); retry");
    }

    static String quoteIdent(Dialect d, String name, boolean qualified) {
        Objects.requireNonNull(name, "identifier");
        String[] parts = qualified ? name.split("\\.", -1) : new String[] {name};
        if (parts.length > 2) {
            throw new IllegalArgumentException("fenceview: identifier " + name + " has more than one dot");
        }
        StringBuilder b = new StringBuilder();
        for (String p : parts) {
            if (b.length() > 0) {
                b.append('.');
            }
            b.append(d.quote(ident(p)));
        }
        return b.toString();
    }

    private static String ident(String s) {
        if (s == null || s.isEmpty()) {
            throw new IllegalArgumentException("fenceview: empty identifier");
        }
        if (s.length() > MAX_IDENT) {
            throw new IllegalArgumentException("fenceview: identifier " + s + " is longer than " + MAX_IDENT + " characters");
        }
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            boolean ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (k > 0 && c >= '0' && c <= '9');
            if (!ok) {
                throw new IllegalArgumentException("fenceview: identifier " + s + ": character '" + c
                        + "' at " + k + " (only letters, digits and _ are allowed)");
            }
        }
        return s;
    }

    /** No row has the id: there is nothing to fence. */
    public static final class RowNotFoundException extends SQLException {
        private static final long serialVersionUID = 1L;

        RowNotFoundException(String table, Object id) {
            super("fenceview: no row of " + table + " has id " + id);
        }
    }

    /** The token was good but the row had moved on from the expected version. */
    public static final class VersionConflictException extends SQLException {
        private static final long serialVersionUID = 1L;
        private final long expected;
        private final long current;

        VersionConflictException(long expected, long current) {
            super("fenceview: version conflict: expected version " + expected + ", row is at " + current);
            this.expected = expected;
            this.current = current;
        }

        public long expected() {
            return expected;
        }

        public long current() {
            return current;
        }
    }

    /**
     * A MySQL/MariaDB connection counts only changed rows as affected, so a write that
     * matched its row but changed nothing (a holder repeating its last write) cannot be
     * told from a refusal. Connector/J and the MariaDB driver count found rows unless
     * {@code useAffectedRows=true}: drop that setting for fenced connections.
     */
    public static final class FoundRowsRequiredException extends SQLException {
        private static final long serialVersionUID = 1L;

        FoundRowsRequiredException() {
            super("fenceview: the MySQL connection must report found rows, not affected ones (remove useAffectedRows=true)");
        }
    }
}
