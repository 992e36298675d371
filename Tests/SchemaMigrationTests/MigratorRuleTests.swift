import Testing

@testable import SchemaMigration

/// A database in memory, with a hook that runs as another process would just
/// before the migration lock is taken: the rules must be checked again under it.
final class MemoryTarget: MigrationTarget {
    var recorded: [AppliedMigration] = []
    var tableExists = false
    var ranScripts: [String] = []
    var inTransaction = false
    var beforeLock: (() -> Void)?
    var failScript: String?

    func appliedMigrations() throws(DatabaseFailure) -> [AppliedMigration] { tableExists ? recorded : [] }
    func createMigrationsTable() throws(DatabaseFailure) { tableExists = true }

    func inMigrationTransaction<T>(_ body: () throws(MigrationError) -> T) throws(MigrationError) -> T {
        beforeLock?()
        beforeLock = nil
        let saved = (recorded, ranScripts)
        inTransaction = true
        defer { inTransaction = false }
        do {
            return try body()
        } catch {
            (recorded, ranScripts) = saved
            throw error
        }
    }

    func runMigrationScript(_ sql: String) throws(DatabaseFailure) {
        if sql == failScript { throw DatabaseFailure(code: "TEST", message: "refused") }
        ranScripts.append(sql)
    }

    var isInMigrationTransaction: Bool { inTransaction }

    func recordMigration(_ migration: Migration) throws(DatabaseFailure) {
        recorded.append(
            AppliedMigration(id: migration.id, name: migration.name, checksum: migration.checksum, appliedAt: "now"))
    }
}

@Suite struct MigratorRuleTests {
    let migrations = (1...3).map { Migration(id: $0, name: "m\($0)", sql: "script \($0)") }

    @Test func appliesInOrderOnceEach() throws {
        let target = MemoryTarget()
        #expect(try Migrator(migrations: migrations.reversed()).migrate(target).map(\.id) == [1, 2, 3])
        #expect(target.ranScripts == ["script 1", "script 2", "script 3"])
        #expect(try Migrator(migrations: migrations).migrate(target).isEmpty)
        #expect(target.ranScripts.count == 3)
    }

    @Test func aMigrationAnotherProcessAppliedMeanwhileIsSkipped() throws {
        let target = MemoryTarget()
        target.beforeLock = { [migrations] in
            target.tableExists = true
            target.recorded.append(
                AppliedMigration(id: 1, name: "m1", checksum: migrations[0].checksum, appliedAt: "earlier"))
        }
        #expect(try Migrator(migrations: migrations).migrate(target).map(\.id) == [2, 3])
        #expect(target.ranScripts == ["script 2", "script 3"])
    }

    @Test func aChangedMigrationRecordedMeanwhileStopsEverything() throws {
        let target = MemoryTarget()
        target.beforeLock = {
            target.tableExists = true
            target.recorded.append(AppliedMigration(id: 1, name: "m1", checksum: "other", appliedAt: "earlier"))
        }
        #expect(throws: MigrationError.self) { try Migrator(migrations: migrations).migrate(target) }
        #expect(target.ranScripts.isEmpty)
    }

    @Test func aFailingScriptIsReportedWithItsCauseAndNotRecorded() throws {
        let target = MemoryTarget()
        target.failScript = "script 2"
        do {
            try Migrator(migrations: migrations).migrate(target)
            Issue.record("the failing script was not reported")
        } catch {
            guard case .failed(let migration, let cause) = error else {
                Issue.record("expected failed, got \(error)")
                return
            }
            #expect(migration.id == 2)
            #expect(cause.code == "TEST")
        }
        #expect(target.recorded.map(\.id) == [1])
    }
}
