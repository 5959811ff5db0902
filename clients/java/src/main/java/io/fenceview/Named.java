package io.fenceview;

/**
 * What a lock, a semaphore and an election share: the client that talks for them and
 * the name the server keeps them by, under {@code /v1/<kind>/<name>}.
 */
abstract class Named {
    final FenceviewClient c;
    final String name;
    private final String kind;

    Named(FenceviewClient c, String kind, String name) {
        this.c = c;
        this.kind = kind;
        this.name = name;
    }

    /**
     * The name: a lock's resource id (Redisson's {@code getName()}), a semaphore's name
     * (its slots are {@code name#i}), an election's (the resource id of its lock).
     */
    public String getName() {
        return name;
    }

    /** The path of this object's action ("" for the object itself). */
    final String path(String action) {
        return FenceviewClient.path(kind, name, action);
    }
}
