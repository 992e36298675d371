import ArgumentParser
import Foundation

/// Resolves a setting from, in order: its command-line flag, its `LISTD_…`
/// environment variable, and its default. A flag always wins; an environment
/// value that does not parse is an error that names the variable, never a
/// silent fall-back to the default.
struct EnvironmentResolver {
    var environment: [String: String]

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// The flag's value, else the variable's, else `defaultValue`.
    func resolve<T: ExpressibleByArgument>(_ flag: T?, _ variable: String, default defaultValue: T) throws -> T {
        try resolve(flag, variable) ?? defaultValue
    }

    /// The flag's value, else the variable's, else `nil`.
    func resolve<T: ExpressibleByArgument>(_ flag: T?, _ variable: String) throws -> T? {
        if let flag { return flag }
        guard let text = environment[variable], !text.isEmpty else { return nil }
        guard let value = T(argument: text) else {
            throw ValidationError("\(variable)=\"\(text)\" is not a valid value\(Self.expectation(for: T.self))")
        }
        return value
    }

    /// A Boolean flag: set on the command line, or by the variable as
    /// `1/true/yes/on` or `0/false/no/off`.
    func resolveFlag(_ flag: Bool, _ variable: String) throws -> Bool {
        if flag { return true }
        guard let text = environment[variable], !text.isEmpty else { return false }
        switch text.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default:
            throw ValidationError("\(variable)=\"\(text)\" is not a valid value: expected true or false")
        }
    }

    private static func expectation<T>(for type: T.Type) -> String {
        switch type {
        case is Int.Type: ": expected a whole number"
        case is Double.Type: ": expected a number"
        default: ""
        }
    }
}
