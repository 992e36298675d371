import Foundation
import ListdTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The test support's own process launcher (the servers every end-to-end test starts).
@Suite struct ChildProcessTests {
    private func run(_ script: String) async throws -> (status: Int32, output: String) {
        let pipe = try closeOnExecPipe()
        let log = OutputLog(FileHandle(fileDescriptor: pipe.read, closeOnDealloc: true))
        let child: ChildProcess
        do {
            defer { close(pipe.write) }
            child = try ChildProcess(
                executable: URL(fileURLWithPath: "/bin/sh"), arguments: ["-c", script], environment: [:],
                directory: FileManager.default.temporaryDirectory, stdout: pipe.write)
        }
        await log.finished()
        return (child.waitUntilExit(), log.text)
    }

    /// A descriptor this process left open on exec (Foundation's `Process`
    /// passes one to every child and learns of the exit when it closes) never
    /// reaches the child, so no child can keep another one's exit from being seen.
    @Test func theChildGetsOnlyTheThreeStandardDescriptors() async throws {
        // Opened without O_CLOEXEC at whatever number is free (never dup2 onto a
        // fixed one: in a process running hundreds of tests that closes another
        // test's descriptor, a database file, under it).
        let leaked = open("/dev/null", O_RDONLY)
        #expect(leaked > 2)
        defer { close(leaked) }
        let script = #"for f in 0 1 2 "# + String(leaked) + #"; do [ -e /proc/$$/fd/$f ] && echo "$f"; done; true"#
        let (status, output) = try await run(script)
        #expect(status == 0)
        #expect(output.split(separator: "\n") == ["0", "1", "2"])
    }

    @Test func theExitCodeAndTheEndingSignalAreReported() async throws {
        #expect(try await run("exit 3").status == 3)
        let sleeper = try ChildProcess(
            executable: URL(fileURLWithPath: "/bin/sleep"), arguments: ["60"], environment: [:],
            directory: FileManager.default.temporaryDirectory)
        #expect(sleeper.isRunning)
        sleeper.terminate()
        #expect(sleeper.waitUntilExit() == SIGTERM)
        #expect(!sleeper.isRunning)
        #expect(sleeper.terminationStatus == SIGTERM)
    }
}
