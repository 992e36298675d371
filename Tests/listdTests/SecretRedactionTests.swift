import Foundation
import ListdTestSupport
import Testing

/// A PostgreSQL password in `--store`, in any of its forms, never reaches
/// listd's output: not in the start log, not in the connection error.
@Suite struct SecretRedactionTests {
    @Test(arguments: [
        "postgres://u@127.0.0.1:1/db?password=hunter2&sslpassword=s3cret",
        "postgresql://u:hunter2@127.0.0.1:1/db?sslpassword=s3cret",
        "postgres://u:%zzhunter2@127.0.0.1:1/db?sslpassword=s3cret",
    ])
    func serveNeverPrintsTheStorePassword(_ store: String) async throws {
        for command in [["serve", "--port", "0"], ["migrate"]] {
            let (status, output) = try await ListdBinary.run(
                command + ["--store", store, "--migrations", ListdServer.migrations.path], stderr: true)
            #expect(status != 0, "\(command[0]) with nothing listening on port 1 fails")
            #expect(!output.contains("hunter2"), "\(command[0]): \(output)")
            #expect(!output.contains("s3cret"), "\(command[0]): \(output)")
            #expect(output.contains("127.0.0.1"), "\(command[0]) still names the server: \(output)")
            #expect(output.contains("***"), "\(command[0]): \(output)")
        }
    }
}
