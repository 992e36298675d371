import Testing

@testable import TortureCore

/// The disk-full nemesis's bookkeeping, and where the schedule puts it.
@Suite struct FullDiskLogTests {
    @Test func a507IsExplainedOnlyWhileTheDiskIsFullOrJustAfter() {
        var log = FullDiskLog()
        #expect(!log.isFull(at: 5))
        log.filled(at: 10)
        #expect(log.isFull(at: 10) && log.isFull(at: 100))
        log.freed(at: 14)
        #expect(log.isFull(at: 15.5))
        #expect(!log.isFull(at: 17))
        #expect(!log.isFull(at: 9))
    }

    @Test func aFreedDiskMustTakeWritesAgainWithinTheBound() {
        var log = FullDiskLog()
        log.filled(at: 10)
        log.acknowledged(at: 12)  // while full (a write that found room): not a recovery
        log.freed(at: 14)
        #expect(log.recoveries(stoppedAt: 20) == [nil])  // too soon to say
        #expect(log.recoveries(stoppedAt: 40) != [nil])  // nothing taken in 26 s
        log.acknowledged(at: 15)
        #expect(log.recoveries(stoppedAt: 40) == [nil])
        log.filled(at: 30)
        log.freed(at: 31)
        log.acknowledged(at: 45)
        #expect(
            log.recoveries(stoppedAt: 60) == [
                nil, "the disk was freed at t+31s, the next write acknowledged 14 s later",
            ])
    }

    @Test func theDiskFillsOnlyOnSQLiteAndDoesNotOverlapOtherFaults() {
        var seen = false
        for seed in UInt64(1)...40 {
            let sqlite = TorturePlan(seed: seed, seconds: 600, store: .sqlite, instances: 1)
            for (event, next) in zip(sqlite.nemeses, sqlite.nemeses.dropFirst()) where event.kind == .diskFull {
                seen = true
                #expect(next.at >= event.at + event.duration)
            }
            let postgres = TorturePlan(seed: seed, seconds: 600, store: .postgres, instances: 3)
            #expect(!postgres.nemeses.contains { $0.kind == .diskFull })
        }
        #expect(seen)
    }
}
