import ArgumentParser
import ListAPI
import ListdTestSupport
import Testing

@testable import listd

/// `--cors-origin` and `--event-heartbeat`, from flags and variables.
@Suite struct BrowserSettingsTests {
    func settings(_ arguments: [String], _ environment: [String: String] = [:]) throws -> Settings {
        let options = try ServeOptions.parse(arguments + ["--migrations", ListdProcess.migrations.path])
        return try Settings(options, EnvironmentResolver(environment: environment))
    }

    @Test func corsOriginsFromFlagsOrTheVariable() throws {
        #expect(try settings([]).service.cors.origins.isEmpty, "no CORS unless asked")
        let flags = try settings(["--cors-origin", "https://a.example", "--cors-origin", "http://localhost:3000"])
        #expect(flags.service.cors.origins == ["https://a.example", "http://localhost:3000"])
        let variable = try settings([], ["LISTD_CORS_ORIGIN": "https://a.example, https://b.example"])
        #expect(variable.service.cors.origins == ["https://a.example", "https://b.example"])
        let flagWins = try settings(["--cors-origin", "*"], ["LISTD_CORS_ORIGIN": "https://a.example"])
        #expect(flagWins.service.cors.origins == ["*"])
    }

    @Test(arguments: ["a.example", "https://a.example/", "ftp://a.example", "https://a.example/path"])
    func anOriginThatIsNotOneIsRefused(_ origin: String) {
        #expect(throws: ValidationError.self) { try settings(["--cors-origin", origin]) }
    }

    @Test func heartbeatFromTheFlagOrTheVariable() throws {
        #expect(try settings([]).service.eventHeartbeat == .seconds(15))
        #expect(try settings(["--event-heartbeat", "2s"]).service.eventHeartbeat == .seconds(2))
        #expect(try settings([], ["LISTD_EVENT_HEARTBEAT": "500ms"]).service.eventHeartbeat == .milliseconds(500))
        #expect(throws: ValidationError.self) { try settings(["--event-heartbeat", "1ms"]) }
    }
}
