import Foundation
import JWTKit

/// The JOSE algorithm a ``TokenKey`` signs and verifies with; a token's `alg` must name it.
public enum TokenAlgorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// HMAC with SHA-256 over a shared secret (`"HS256"`): the application's server and listd hold the same bytes.
    case hs256 = "HS256"
    /// Ed25519 signatures (`"EdDSA"`): the application's server holds the private key, listd may hold only the public one.
    case eddsa = "EdDSA"

    /// The name a token's `alg` header carries.
    public var joseName: String { rawValue }

    /// The JOSE name.
    public var description: String { rawValue }

    /// The length of a signature, in bytes: what a token's third part decodes to.
    var signatureBytes: Int {
        switch self {
        case .hs256: 32
        case .eddsa: 64
        }
    }
}

/// The key listd checks signed tokens with (and, if it holds the secret half, mints them with),
/// read from the file `--token-key` names.
///
/// A key file is one of:
/// - a PEM `PUBLIC KEY` (SPKI) holding an Ed25519 key: ``TokenAlgorithm/eddsa``, verify only;
/// - a PEM `PRIVATE KEY` (PKCS #8) holding an Ed25519 key: ``TokenAlgorithm/eddsa``, verify and mint
///   (the public half is derived);
/// - anything else: an HS256 secret, the file's bytes with one trailing `"\n"` or `"\r\n"` removed,
///   at least ``minimumSecretBytes`` of them.
///
/// A PEM of another kind (RSA, EC, a certificate, an encrypted or OpenSSH key) is refused with an
/// error that names it. Neither ``description``, ``debugDescription`` nor the key's mirror shows any
/// key material.
///
/// Making a key builds jwt-kit's signing algorithm for it once. jwt-kit 5.8.0 hands its algorithms
/// out only through the `JWTKeyCollection` actor, so this is `async`; what it yields is used
/// synchronously from then on (`TokenVerifier.verify(_:now:)` never suspends).
public struct TokenKey: Sendable {
    /// The algorithm tokens checked with this key must name in `alg`.
    public let algorithm: TokenAlgorithm
    /// Whether this key can sign: an HS256 secret or an Ed25519 private key can, an Ed25519 public key cannot.
    public let canMint: Bool
    /// jwt-kit's signing algorithm for the key; its `verify(_:signs:)` and `sign(_:)` are synchronous.
    let signer: any JWTAlgorithm

    /// The fewest bytes an HS256 secret may have: SHA-256's output size, as RFC 7518 §3.2 requires.
    public static let minimumSecretBytes = 32
    /// The largest key file read: a key is a few hundred bytes, so a bigger file is the wrong file.
    public static let maximumFileBytes = 64 * 1024

    /// Reads the key in the file at `path`.
    /// - Throws: ``TokenKeyError`` naming `path` and what is wrong: the file cannot be read, is too
    ///   large, is a PEM of an unsupported kind, or is a secret shorter than ``minimumSecretBytes``.
    public static func load(path: String) async throws(TokenKeyError) -> TokenKey {
        let contents: [UInt8]
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            contents = [UInt8](try handle.read(upToCount: maximumFileBytes + 1) ?? Data())
        } catch {
            throw TokenKeyError(.unreadable(Self.reason(error)), path: path)
        }
        do {
            return try await TokenKey(contents: contents)
        } catch {
            throw TokenKeyError(error.reason, path: path)
        }
    }

    /// Makes the key a key file's `contents` hold (see ``TokenKey`` for the forms).
    /// - Throws: ``TokenKeyError`` for a file that is not a usable key.
    public init(contents: [UInt8]) async throws(TokenKeyError) {
        let material = try KeyMaterial(contents)
        let collection = JWTKeyCollection()
        switch material {
        case .secret(let secret):
            await collection.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        case .publicKey(let key):
            await collection.add(eddsa: key)
        case .privateKey(let key):
            await collection.add(eddsa: key)
        }
        do {
            signer = try await collection.getKey()
        } catch {
            // A collection holding one default key always has it; this is jwt-kit failing.
            throw TokenKeyError(.unusable("jwt-kit made no algorithm for the key: \(error)"))
        }
        algorithm = material.algorithm
        canMint = material.canMint
    }

    private static func reason(_ error: any Error) -> String {
        if let error = error as? CocoaError, let underlying = error.underlying as? POSIXError {
            return String(describing: underlying.code)
        }
        return (error as NSError).localizedDescription
    }
}

extension TokenKey: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The algorithm and what the key can do, never the key: `TokenKey(EdDSA, verify only)`.
    public var description: String { "TokenKey(\(algorithm), \(canMint ? "verify and mint" : "verify only"))" }
    /// As ``description``.
    public var debugDescription: String { description }
    /// The algorithm and ``canMint`` only, so `dump` shows no key material.
    public var customMirror: Mirror {
        Mirror(self, children: ["algorithm": algorithm, "canMint": canMint], displayStyle: .struct)
    }
}

/// The files of a new key, as ``TokenKey/generate(_:)`` makes them.
public struct GeneratedTokenKey: Sendable, CustomStringConvertible {
    /// The key file: an HS256 secret, or an Ed25519 private key in PEM. Secret: write it readable by its owner only.
    public var keyFile: [UInt8]
    /// For Ed25519, the public key in PEM, for the servers that only verify; `nil` for HS256.
    public var publicKeyFile: [UInt8]?

    /// Says what the files are, never what they hold.
    public var description: String {
        publicKeyFile == nil ? "GeneratedTokenKey(HS256 secret)" : "GeneratedTokenKey(Ed25519 private and public PEM)"
    }
}

extension TokenKey {
    /// A new random key, as files that ``load(path:)`` reads.
    ///
    /// An HS256 secret is 256 random bits written as 43 base64url characters and a newline (the
    /// secret is those 43 characters, as an application's server reading the file as text sees it).
    /// An Ed25519 key is a PKCS #8 private key PEM and its SPKI public key PEM.
    /// - Throws: ``TokenKeyError`` only if jwt-kit cannot make an Ed25519 key.
    public static func generate(_ algorithm: TokenAlgorithm) throws(TokenKeyError) -> GeneratedTokenKey {
        switch algorithm {
        case .hs256:
            // SystemRandomNumberGenerator is the platform's cryptographically secure source (getrandom on Linux).
            var generator = SystemRandomNumberGenerator()
            let secret = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            return GeneratedTokenKey(keyFile: Base64URL.encode(secret) + [UInt8(ascii: "\n")], publicKeyFile: nil)
        case .eddsa:
            let key: EdDSA.PrivateKey
            do {
                key = try EdDSA.PrivateKey(curve: .ed25519)
            } catch {
                throw TokenKeyError(.unusable("jwt-kit could not make an Ed25519 key: \(error)"))
            }
            return GeneratedTokenKey(
                keyFile: Self.pemFile(key.pemRepresentation),
                publicKeyFile: Self.pemFile(key.publicKey.pemRepresentation))
        }
    }

    private static func pemFile(_ pem: String) -> [UInt8] {
        pem.hasSuffix("\n") ? Array(pem.utf8) : Array(pem.utf8) + [UInt8(ascii: "\n")]
    }
}

/// Why a key file cannot be used, and which file.
public struct TokenKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong with the key.
    public enum Reason: Sendable, Equatable {
        /// The file cannot be read; the system's words for why.
        case unreadable(String)
        /// The file is larger than ``TokenKey/maximumFileBytes``.
        case tooLarge
        /// An HS256 secret shorter than ``TokenKey/minimumSecretBytes``: how many bytes it has.
        case secretTooShort(bytes: Int)
        /// A PEM of a kind listd does not take, named: `"an RSA key"`, `"an EC key"`, `"a certificate"`…
        case unsupportedKeyType(String)
        /// A PEM whose framing, base64 or contents are broken: what is wrong.
        case malformedPEM(String)
        /// Minting asked of an Ed25519 public key, which can only verify.
        case publicKeyOnly
        /// jwt-kit refused the key; its words.
        case unusable(String)
    }

    /// What is wrong.
    public var reason: Reason
    /// The file, when the key came from one.
    public var path: String?

    /// Creates an error.
    public init(_ reason: Reason, path: String? = nil) {
        self.reason = reason
        self.path = path
    }

    /// A sentence an operator can act on, naming the file: `key.pem: an HS256 secret must be at least 32 bytes; this one is 12`.
    public var description: String {
        let prefix = path.map { "\($0): " } ?? ""
        return prefix + detail
    }

    private var detail: String {
        let forms =
            "a token key is an Ed25519 key in PEM (\"PUBLIC KEY\" to verify, \"PRIVATE KEY\" to verify and mint) "
            + "or an HS256 secret of at least \(TokenKey.minimumSecretBytes) bytes"
        switch reason {
        case .unreadable(let why):
            return "cannot read the token key: \(why)"
        case .tooLarge:
            return
                "the token key file is larger than \(TokenKey.maximumFileBytes) bytes; is it the right file? \(forms)"
        case .secretTooShort(let bytes):
            return
                "an HS256 secret must be at least \(TokenKey.minimumSecretBytes) bytes; this one is \(bytes) "
                + "(`listd token keygen --hs256 --out FILE` or `openssl rand -hex 32` makes one)"
        case .unsupportedKeyType(let kind):
            return "the token key is \(kind), which listd does not take: \(forms)"
        case .malformedPEM(let why):
            return "the token key is a malformed PEM: \(why)"
        case .publicKeyOnly:
            return
                "the token key is an Ed25519 public key, which can only verify tokens; minting needs the "
                + "private key (the PEM \"PRIVATE KEY\")"
        case .unusable(let why):
            return "the token key cannot be used: \(why)"
        }
    }
}
