package io.fenceview;

/**
 * A write was refused by a guard: the holder's token is no longer good enough
 * (usually a newer holder has written). Stop; do not retry with the same token.
 */
public class FencedOutException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final transient Decision decision;
    private final String resource;

    public FencedOutException(String resource, Decision d) {
        super("fenceview: token " + d.presented() + " refused for " + resource + " (" + d.reason() + ")"
                + (d.required() > 0 ? ": required " + d.required() : ""));
        this.resource = resource;
        this.decision = d;
    }

    public String resource() {
        return resource;
    }

    public Decision decision() {
        return decision;
    }
}
