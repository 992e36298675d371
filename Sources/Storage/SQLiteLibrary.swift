import CSQLite

/// Facts about the SQLite library this process is linked against.
public enum SQLiteLibrary {
    /// The library's version, for example `3.40.1`.
    public static var version: String { String(cString: sqlite3_libversion()) }

    /// Whether the library was built thread-safe; listd requires it because
    /// its writer and reader connections live on different threads.
    public static var isThreadSafe: Bool { sqlite3_threadsafe() != 0 }
}
