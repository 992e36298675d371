import Foundation
import Testing

@testable import Storage

@Suite struct FileLockTests {
    @Test func aSecondLockOnTheSameFileIsRefusedNamingTheHolder() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("db.sqlite-lock")
        let first = try FileLock(path: path)
        do {
            _ = try FileLock(path: path)
            Issue.record("a second lock on \(path) was granted")
        } catch {
            #expect(error.errno == nil)
            #expect(error.holder == getpid())
            #expect(error.description.contains(path))
            #expect(error.description.contains("process \(getpid())"))
        }
        first.release()
        first.release()  // harmless
        let again = try FileLock(path: path)
        again.release()
    }

    @Test func releasingOnDeinitFreesTheFile() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("x-lock")
        do { _ = try FileLock(path: path) }
        let second = try FileLock(path: path)
        second.release()
    }

    @Test func aLockInAnUnwritableFolderFailsWithItsErrno() throws {
        let path = "/proc/listd-no-such-folder/db-lock"
        #expect(throws: FileLock.Failure.self) { _ = try FileLock(path: path) }
        do {
            _ = try FileLock(path: path)
        } catch {
            #expect(error.errno != nil)
            #expect(error.description.contains(path))
        }
    }
}
