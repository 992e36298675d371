/// What a request that got no answer may have done, from the call that failed.
public enum FailedCall {
    /// Whether the request may have reached the server (and been applied): false
    /// only when the failed call is the connect or the name lookup, so the request
    /// never left. A reused connection that failed after the request went out
    /// mentions "connection" in its call; that is not a connect.
    public static func mayHaveReachedServer(_ call: String) -> Bool {
        !(call.hasPrefix("connect") || call.hasPrefix("getaddrinfo") || call.hasPrefix("resolve"))
    }
}
