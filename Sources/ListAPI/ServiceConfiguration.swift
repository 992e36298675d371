/// How the service behaves; the command line fills it in.
public struct ServiceConfiguration: Sendable {
    /// Who may read and write.
    public var accessPolicy: AccessPolicy
    /// The largest request body accepted, in bytes.
    public var maxBodyBytes: Int
    /// The deepest nesting a model may have.
    public var maxModelDepth: Int
    /// A long-poll's wait when the client names none.
    public var defaultChangeTimeout: Duration
    /// The longest wait a client may ask for.
    public var maxChangeTimeout: Duration
    /// The most bytes of serialized snapshots kept in memory.
    public var snapshotCacheBytes: Int
    /// The granularity of long-poll timeouts.
    public var timeoutTick: Duration
    /// How often an idle event stream gets a comment line, so proxies keep it open.
    public var eventHeartbeat: Duration = .seconds(15)
    /// Which browser origins may call listd (CORS); empty: none, and no CORS header is sent.
    public var cors = CORSPolicy()
    /// The `Host` names answered when no token is set (`--public-host`, and
    /// the bound address); loopback names always are.
    public var hosts = HostAllowList()
    /// The most event streams and long-polls one caller may hold open at once
    /// (`--max-waits-per-caller`); 0: no limit. See ``CallerLimits``.
    public var maxWaitsPerCaller = 100
    /// Roughly the most bytes the views kept in memory may hold (docs/API.md,
    /// "Views"); the least recently used are dropped beyond it and rebuilt
    /// from the list's rows when next followed.
    public var viewMemory = 256 << 20
    /// The store's history retention (``ListStore/StoreConfiguration/historyVersions``
    /// and ``ListStore/StoreConfiguration/historyAge``): kept views move forward by
    /// recent commits held in memory only from versions the store still keeps.
    public var history: (versions: Int64, age: Duration) = (10_000, .seconds(7 * 86_400))

    /// Creates a configuration with listd's defaults.
    public init(
        accessPolicy: AccessPolicy = AccessPolicy(writeToken: nil, readToken: nil),
        maxBodyBytes: Int = 32 * 1024 * 1024,
        maxModelDepth: Int = 64,
        defaultChangeTimeout: Duration = .seconds(30),
        maxChangeTimeout: Duration = .seconds(300),
        snapshotCacheBytes: Int = 64 * 1024 * 1024,
        timeoutTick: Duration = .milliseconds(100)
    ) {
        self.accessPolicy = accessPolicy
        self.maxBodyBytes = maxBodyBytes
        self.maxModelDepth = maxModelDepth
        self.defaultChangeTimeout = defaultChangeTimeout
        self.maxChangeTimeout = maxChangeTimeout
        self.snapshotCacheBytes = snapshotCacheBytes
        self.timeoutTick = timeoutTick
    }
}
