import ListModel
import ListStore
import Postgres

/// How instances sharing one PostgreSQL database tell each other of commits.
///
/// A writer calls ``publish(_:on:)`` inside the transaction that makes the
/// commits: it records each one in the `commits` table and sends it with
/// `NOTIFY listd_commits`, which PostgreSQL delivers to every listening session
/// when (and only if) the transaction commits. An instance that lost its
/// listening session reads the `commits` rows it may have missed
/// (``missed(since:on:)``), so a wake-up is never lost.
///
/// A payload is one line per commit, `list epoch version deleted`, with as many
/// commits as fit under PostgreSQL's 8,000-byte limit per notification. List
/// ids and epochs never contain spaces or newlines (see ``Identifier``).
public enum CommitChannel {
    /// The notification channel.
    public static let name = "listd_commits"
    /// The most payload bytes sent in one notification (PostgreSQL's limit is 8,000).
    static let maxPayloadBytes = 7_900

    /// Records `commits` and notifies them, in `connection`'s open transaction
    /// (sent in its pipeline: failures surface at its next `sync()` or read).
    public static func publish(_ commits: [Commit], on connection: Connection) throws(PostgresError) {
        guard !commits.isEmpty else { return }
        // One statement for all of them; committed_at is the server's clock, shared
        // by every instance (catch-up compares it). Ids and epochs hold no
        // characters an array literal would need quoted (see Identifier).
        func array(_ values: [String]) -> PostgresValue { .text("{" + values.joined(separator: ",") + "}") }
        try connection.enqueue(
            """
            INSERT INTO commits (list_id, epoch, version, deleted, committed_at)
            SELECT list_id, epoch, version, deleted, (extract(epoch FROM clock_timestamp()) * 1000)::int8
            FROM unnest($1::text[], $2::text[], $3::int8[], $4::int2[]) WITH ORDINALITY
                AS c(list_id, epoch, version, deleted, position)
            ORDER BY position
            """,
            [
                array(commits.map(\.list.rawValue)), array(commits.map(\.epoch)),
                array(commits.map { String($0.version) }), array(commits.map { $0.deleted ? "1" : "0" }),
            ])
        for payload in payloads(commits) {
            try connection.enqueue("SELECT pg_notify($1, $2)", [.text(name), .text(payload)])
        }
    }

    /// The commits recorded at or after `since` (server milliseconds), only the
    /// latest of each list, in commit-sequence order: what an instance must
    /// replay after its listening session was lost.
    ///
    /// Only the latest per list, because a replayed older commit could undo a
    /// newer one the instance already heard (a deletion replayed after the list
    /// was created again).
    public static func missed(since: Int64, on connection: Connection) throws(PostgresError) -> [Commit] {
        let rows = try connection.query(
            """
            SELECT list_id, epoch, version, deleted FROM (
                SELECT DISTINCT ON (list_id) seq, list_id, epoch, version, deleted
                FROM commits WHERE committed_at >= $1 ORDER BY list_id, seq DESC
            ) latest ORDER BY seq
            """, .integer(since))
        return try rows.map { row throws(PostgresError) in
            guard let list = Identifier(try row.text(0)) else {
                throw PostgresError(.misuse, message: "commits holds an invalid list id \(try row.text(0))")
            }
            return Commit(list: list, epoch: try row.text(1), version: try row.int64(2), deleted: try row.int64(3) == 1)
        }
    }

    /// Deletes up to `limit` commit records older than `before` (server
    /// milliseconds), the oldest first, skipping rows another session is
    /// deleting: the cost grows with the rows removed, not with the table.
    /// - Returns: how many it deleted (`limit` when more may remain).
    @discardableResult
    public static func prune(before: Int64, limit: Int = 2_000, on connection: Connection) throws(PostgresError)
        -> Int
    {
        try connection.query(
            """
            DELETE FROM commits WHERE seq IN
                (SELECT seq FROM commits WHERE committed_at < $1 ORDER BY committed_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            """, .integer(before), .integer(Int64(limit))
        ).affectedRows
    }

    /// The server's clock in Unix milliseconds.
    public static func serverNow(on connection: Connection) throws(PostgresError) -> Int64 {
        try connection.query("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::int8")[0].int64(0)
    }

    // MARK: Payloads

    /// `commits` as notification payloads, each under the size limit.
    static func payloads(_ commits: [Commit]) -> [String] {
        var payloads: [String] = []
        var current = ""
        for commit in commits {
            let line = "\(commit.list.rawValue) \(commit.epoch) \(commit.version) \(commit.deleted ? 1 : 0)"
            if !current.isEmpty, current.utf8.count + 1 + line.utf8.count > maxPayloadBytes {
                payloads.append(current)
                current = ""
            }
            current = current.isEmpty ? line : current + "\n" + line
        }
        if !current.isEmpty { payloads.append(current) }
        return payloads
    }

    /// The commits of one payload; lines that do not parse are skipped (and counted).
    static func commits(inPayload payload: String) -> (commits: [Commit], malformed: Int) {
        var commits: [Commit] = []
        var malformed = 0
        for line in payload.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 4, let list = Identifier(String(fields[0])), let version = Int64(fields[2]),
                fields[3] == "0" || fields[3] == "1"
            else {
                malformed += 1
                continue
            }
            commits.append(Commit(list: list, epoch: String(fields[1]), version: version, deleted: fields[3] == "1"))
        }
        return (commits, malformed)
    }
}
