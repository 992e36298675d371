import ArgumentParser
import Foundation
import ListView
import POSIXIO
import Tokens

/// `listd token`: signed tokens (JWTs) for scripts and tests, and keys to sign them with.
/// An application's own server usually mints its users' tokens itself (docs/tokens.md).
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Mint signed tokens (JWTs) for listd, and make keys for them.",
        subcommands: [Mint.self, Keygen.self]
    )
}

extension TokenCommand {
    /// `listd token mint`: prints a token signed with a key file.
    struct Mint: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "mint",
            abstract: "Print a signed token (a JWT) for listd's --token-key.",
            discussion: """
                Example: listd token mint --key token.key --lists 'u42-*' --rights read,write --ttl 1h --sub u42
                """
        )

        @Option(help: "The key file: an HS256 secret, or an Ed25519 private key in PEM (not the public key).")
        var key: String

        @Option(
            help: ArgumentHelp(
                "A list the token opens: an id, a prefix ending in * ('u42-*'), or '*' for every list. Repeat it, or separate with commas.",
                valueName: "pattern"))
        var lists: [String] = []

        @Option(
            help: ArgumentHelp(
                "What the token may do: read, write (includes read), admin; comma-separated.", valueName: "rights"))
        var rights: String

        @Option(
            help: "How long the token is valid: a number with s, m, h or d (30m, 1h, 7d); a bare number is seconds.")
        var ttl: DurationArgument

        @Option(
            help: ArgumentHelp(
                "View parameters forced on every read ('where=owner:u42'); such a token cannot write.",
                valueName: "query"))
        var view: String?

        @Option(
            help: ArgumentHelp("Who the token is for (its sub claim, shown in listd's logs).", valueName: "subject"))
        var sub: String?

        func validate() throws {
            _ = try patterns()
            _ = try parsedRights()
            guard ttl.duration > .zero else { throw ValidationError("--ttl must be more than 0, got \(ttl)") }
            if let view {
                guard !view.isEmpty else {
                    throw ValidationError("--view is empty; leave it out for a token that sees whole lists")
                }
                do throws(ViewSpecError) {
                    _ = try ViewSpec(parsing: view)
                } catch {
                    throw ValidationError("--view: \(error.detail)")
                }
            }
        }

        func run() async throws {
            let tokenKey: TokenKey
            let minter: TokenMinter
            do throws(TokenKeyError) {
                tokenKey = try await TokenKey.load(path: key)
                minter = try TokenMinter(key: tokenKey)
            } catch {
                var named = error
                named.path = key
                throw ValidationError("--key \(named)")
            }
            let now = Date()
            let claims = TokenClaims(
                subject: sub, lists: try patterns(), rights: try parsedRights(), view: view,
                expires: now + ttl.seconds)
            print(try minter.mint(claims, issuedAt: now))
        }

        /// The `--lists` patterns, each option split at commas (a list id has none).
        func patterns() throws -> [ListPattern] {
            let texts = lists.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            guard !texts.isEmpty else {
                throw ValidationError("give the lists the token opens: --lists 'u42-*' (or '*' for every list)")
            }
            return try texts.map { text throws(ValidationError) in
                guard let pattern = ListPattern(String(text)) else {
                    let why = ListPattern.validationFailure(String(text)) ?? "not a pattern"
                    throw ValidationError("--lists '\(text)': \(why)")
                }
                return pattern
            }
        }

        /// The `--rights` words.
        func parsedRights() throws -> TokenRights {
            var parsed: TokenRights = []
            for word in rights.split(separator: ",", omittingEmptySubsequences: false) {
                let trimmed = word.trimmingCharacters(in: .whitespaces)
                guard let right = TokenRights(word: trimmed) else {
                    throw ValidationError("--rights: '\(trimmed)' is not a right; rights are read, write and admin")
                }
                parsed.insert(right)
            }
            return parsed
        }
    }
}

extension TokenCommand {
    /// `listd token keygen`: writes a new key file (and, for Ed25519, its public key beside it).
    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract: "Write a new token key: an HS256 secret, or an Ed25519 key pair.",
            discussion: """
                --hs256 writes a random 256-bit secret (43 base64url characters and a newline) to FILE. \
                --ed25519 writes the private key in PEM to FILE and the public key in PEM to FILE.pub: \
                give listd the .pub (it verifies) and your application's server FILE (it mints). \
                FILE is created readable by its owner only (mode 0600); an existing file is never overwritten.
                """
        )

        enum Algorithm: String, EnumerableFlag {
            case hs256, ed25519

            static func help(for value: Self) -> ArgumentHelp? {
                switch value {
                case .hs256: "A shared secret: listd and the application's server hold the same file."
                case .ed25519: "A key pair: the application's server signs with FILE, listd verifies with FILE.pub."
                }
            }
        }

        @Flag var algorithm: Algorithm

        @Option(help: ArgumentHelp("Where to write the key.", valueName: "file"))
        var out: String

        func run() throws {
            let files: GeneratedTokenKey
            do {
                files = try TokenKey.generate(algorithm == .hs256 ? .hs256 : .eddsa)
            } catch {
                throw CommandFailure("cannot make a key: \(error)")
            }
            let publicPath = out + ".pub"
            if files.publicKeyFile != nil, FileManager.default.fileExists(atPath: publicPath) {
                throw ValidationError("\(publicPath) exists; listd token keygen never overwrites a file")
            }
            try Self.write(files.keyFile, to: out, mode: 0o600)
            if let publicKeyFile = files.publicKeyFile {
                do {
                    try Self.write(publicKeyFile, to: publicPath, mode: 0o644)
                } catch {
                    // Half a key pair is no use: take the private key back.
                    try? FileManager.default.removeItem(atPath: out)
                    throw error
                }
                print("wrote the private key to \(out) (mode 0600) and the public key to \(publicPath)")
            } else {
                print("wrote an HS256 secret to \(out) (mode 0600)")
            }
        }

        /// Writes `bytes` to a new file `path` with `mode`, refusing to replace anything there.
        static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws {
            let fd: Int32
            do throws(SystemError) {
                fd = try System.createNewFile(path, mode: mode)
            } catch  where error.errno == EEXIST {
                throw ValidationError("\(path) exists; listd token keygen never overwrites a file")
            } catch {
                throw CommandFailure("cannot create \(path): \(error)")
            }
            defer { System.close(fd) }
            do {
                try bytes.withUnsafeBytes { try System.writeAll(fd, $0) }
                try System.fsync(fd)
            } catch {
                try? FileManager.default.removeItem(atPath: path)
                throw CommandFailure("cannot write \(path): \(error)")
            }
        }
    }
}
