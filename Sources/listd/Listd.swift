import ArgumentParser

/// The `listd` command: a server for live, sectioned lists.
@main
struct Listd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listd",
        abstract: "A server for live, sectioned lists.",
        subcommands: [
            ServeCommand.self, MigrateCommand.self, HealthCommand.self, WatchCommand.self, TokenCommand.self,
            VersionCommand.self,
        ]
    )
}
