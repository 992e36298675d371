import Foundation
import Glibc
import Synchronization

/// A small tmpfs the harness mounts for the SQLite store, so a nemesis can fill
/// it (a ballast file written until `ENOSPC`) and free it again.
///
/// Unmounted by ``unmount()`` at the end of a run, and by ``Teardown`` on every
/// other way out of the process; a mount still busy (a listd not yet gone) is
/// detached lazily (`umount -l`).
final class Disk: Sendable {
    /// The mount point; the store is `path/listd.sqlite`.
    let path: String
    private var ballast: String { "\(path)/ballast" }

    /// Mounts a tmpfs of `megabytes` at a new folder, or nil (printing why) when
    /// the kernel or the sandbox refuses.
    static func mount(megabytes: Int) -> Disk? {
        let path = "/tmp/listd-torture-disk-\(getpid())"
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            say("disk-full nemesis skipped: could not make \(path): \(error)")
            return nil
        }
        let (status, output) = ThrowawayPostgres.run([
            "/bin/mount", "-t", "tmpfs", "-o", "size=\(megabytes)m,mode=0700", "tmpfs", path,
        ])
        guard status == 0 else {
            say(
                "disk-full nemesis skipped: mount -t tmpfs refused (\(output.trimmingCharacters(in: .whitespacesAndNewlines))); "
                    + "the SQLite store stays on the ordinary disk")
            try? FileManager.default.removeItem(atPath: path)
            return nil
        }
        let disk = Disk(path: path)
        Teardown.add { disk.unmount() }
        return disk
    }

    private init(path: String) { self.path = path }

    /// Fills the disk: writes the ballast until the file system says it is full.
    /// Returns the bytes written.
    func fill() -> Int {
        guard let handle = FileHandle(forWritingAtPath: ballast) ?? create() else { return 0 }
        defer { try? handle.close() }
        let chunk = Data(repeating: 0x42, count: 1 << 20)
        var written = 0
        var small = Data(repeating: 0x42, count: 4096)
        while true {
            do {
                try handle.write(contentsOf: chunk)
                written += chunk.count
            } catch {
                break
            }
        }
        // The last pages, to the last byte SQLite could have had.
        while !small.isEmpty {
            do {
                try handle.write(contentsOf: small)
                written += small.count
            } catch {
                small = small.count > 1 ? small.prefix(small.count / 2) : Data()
            }
        }
        return written
    }

    private func create() -> FileHandle? {
        _ = FileManager.default.createFile(atPath: ballast, contents: nil)
        return FileHandle(forWritingAtPath: ballast)
    }

    /// Frees the disk again.
    func free() { try? FileManager.default.removeItem(atPath: ballast) }

    private let unmounted = Atomic<Bool>(false)

    /// Unmounts the tmpfs (its store with it) and removes the mount point (once).
    func unmount() {
        guard !unmounted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        if ThrowawayPostgres.run(["/bin/umount", path]).0 != 0 {
            ThrowawayPostgres.run(["/bin/umount", "-l", path])
        }
        rmdir(path)
    }
}
