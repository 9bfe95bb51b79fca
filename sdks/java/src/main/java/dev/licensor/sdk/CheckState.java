package dev.licensor.sdk;

/** What a {@link LicenceClient#check()} concludes. */
public enum CheckState {
    /** The latest verified answer says licensed on this machine, and it is this call's or younger than the licence's {@code max}. */
    VALID,
    /** The latest verified answer said licensed but is older than {@code max} (or its age cannot be trusted: the clock went back), or there is none. */
    STALE,
    /** The licence is refused offline, or the latest verified answer said not licensed here; that stands, whatever its age, until a later verified answer says otherwise. */
    INVALID
}
