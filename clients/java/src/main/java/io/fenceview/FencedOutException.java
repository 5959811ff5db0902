package io.fenceview;

/**
 * A write was refused by a guard: the holder's token is no longer good enough
 * (usually a newer holder has written). Stop; do not retry with the same token.
 */
public class FencedOutException extends FencingException {
    private static final long serialVersionUID = 1L;
    private final Decision decision;

    public FencedOutException(String resource, Decision d) {
        super(resource, "fenceview: token " + d.presented() + " refused for " + resource + " (" + d.reason() + ")"
                + (d.required() > 0 ? ": required " + d.required() : ""), null);
        this.decision = d;
    }

    /** The refusal's code: the decision's reason ({@code stale-token}, {@code bad-signature}, ...). */
    public String getCode() {
        return decision.reason();
    }

    public Decision decision() {
        return decision;
    }

    /** The token the guard refused: {@code decision().presented()}. */
    @Override
    public long token() {
        return decision.presented();
    }
}
