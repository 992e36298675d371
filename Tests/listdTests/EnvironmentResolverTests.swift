import ArgumentParser
import Testing

@testable import listd

@Suite struct EnvironmentResolverTests {
    @Test func flagWinsOverEnvironmentWhichWinsOverDefault() throws {
        let resolver = EnvironmentResolver(environment: ["LISTD_PORT": "9000"])
        #expect(try resolver.resolve(7000, "LISTD_PORT", default: 8080) == 7000)
        #expect(try resolver.resolve(nil as Int?, "LISTD_PORT", default: 8080) == 9000)
        #expect(try resolver.resolve(nil as Int?, "LISTD_OTHER", default: 8080) == 8080)
    }

    @Test func anEnvironmentValueThatDoesNotParseIsAnErrorNamingTheVariable() {
        let resolver = EnvironmentResolver(environment: ["LISTD_PORT": "eighty"])
        #expect {
            _ = try resolver.resolve(nil as Int?, "LISTD_PORT", default: 8080)
        } throws: { error in
            "\(error)".contains("LISTD_PORT=\"eighty\"")
        }
    }

    @Test(arguments: [("1", true), ("true", true), ("YES", true), ("0", false), ("off", false)])
    func booleanVariables(_ text: String, _ expected: Bool) throws {
        let resolver = EnvironmentResolver(environment: ["LISTD_NO_MIGRATE": text])
        #expect(try resolver.resolveFlag(false, "LISTD_NO_MIGRATE") == expected)
        #expect(try resolver.resolveFlag(true, "LISTD_NO_MIGRATE"))
    }

    @Test func aBooleanVariableThatDoesNotParseIsAnError() {
        let resolver = EnvironmentResolver(environment: ["LISTD_NO_MIGRATE": "maybe"])
        #expect(throws: ValidationError.self) { try resolver.resolveFlag(false, "LISTD_NO_MIGRATE") }
    }

    @Test(arguments: [
        ("30", 30.0), ("30s", 30.0), ("500ms", 0.5), ("15m", 900.0), ("12h", 43_200.0), ("7d", 604_800.0),
    ])
    func durations(_ text: String, _ seconds: Double) throws {
        let parsed = try #require(DurationArgument(argument: text))
        #expect(parsed.seconds == seconds)
    }

    @Test(arguments: ["", "s", "-1s", "abc", "1w", "nan", "1e300d"])
    func invalidDurations(_ text: String) {
        #expect(DurationArgument(argument: text) == nil)
    }
}
