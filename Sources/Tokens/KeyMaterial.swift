import Foundation
import JWTKit

/// What a key file holds, parsed but not yet handed to jwt-kit.
enum KeyMaterial {
    case secret([UInt8])
    case publicKey(EdDSA.PublicKey)
    case privateKey(EdDSA.PrivateKey)

    var algorithm: TokenAlgorithm {
        switch self {
        case .secret: .hs256
        case .publicKey, .privateKey: .eddsa
        }
    }

    var canMint: Bool {
        switch self {
        case .secret, .privateKey: true
        case .publicKey: false
        }
    }

    /// Tells a PEM from a secret by its first line: a file that starts (after blank space) with
    /// `-----BEGIN ` is a PEM, and must be a good one; anything else is a secret.
    init(_ contents: [UInt8]) throws(TokenKeyError) {
        guard contents.count <= TokenKey.maximumFileBytes else { throw TokenKeyError(.tooLarge) }
        let start = contents.firstIndex { !Self.isSpace($0) } ?? contents.endIndex
        if contents[start...].starts(with: PEMBlock.begin) {
            self = try Self.pem(contents)
        } else {
            var secret = contents[...]
            if secret.last == UInt8(ascii: "\n") {
                secret.removeLast()
                if secret.last == UInt8(ascii: "\r") { secret.removeLast() }
            }
            guard secret.count >= TokenKey.minimumSecretBytes else {
                throw TokenKeyError(.secretTooShort(bytes: secret.count))
            }
            self = .secret(Array(secret))
        }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
            || byte == UInt8(ascii: "\t")
    }

    private static func pem(_ contents: [UInt8]) throws(TokenKeyError) -> KeyMaterial {
        let block = try PEMBlock(contents)
        switch block.label {
        case "PUBLIC KEY":
            let kind = block.keyKind
            guard kind == .ed25519 else { throw TokenKeyError(.unsupportedKeyType(kind.name)) }
            do {
                return .publicKey(try EdDSA.PublicKey(pem: block.text))
            } catch {
                throw TokenKeyError(.malformedPEM("it names Ed25519 but does not hold a valid Ed25519 public key"))
            }
        case "PRIVATE KEY":
            let kind = block.keyKind
            guard kind == .ed25519 else { throw TokenKeyError(.unsupportedKeyType(kind.name)) }
            do {
                return .privateKey(try EdDSA.PrivateKey(pem: block.text))
            } catch {
                throw TokenKeyError(.malformedPEM("it names Ed25519 but does not hold a valid Ed25519 private key"))
            }
        case "RSA PUBLIC KEY", "RSA PRIVATE KEY":
            throw TokenKeyError(.unsupportedKeyType("an RSA key"))
        case "EC PRIVATE KEY", "EC PARAMETERS":
            throw TokenKeyError(.unsupportedKeyType("an EC (ECDSA) key"))
        case "ENCRYPTED PRIVATE KEY":
            throw TokenKeyError(
                .unsupportedKeyType("an encrypted private key (decrypt it first: `openssl pkey -in FILE -out PLAIN`)"))
        case "OPENSSH PRIVATE KEY":
            throw TokenKeyError(.unsupportedKeyType("an OpenSSH private key (listd takes PKCS #8 PEM)"))
        case "CERTIFICATE":
            throw TokenKeyError(
                .unsupportedKeyType("a certificate (give its public key: `openssl x509 -in FILE -pubkey -noout`)"))
        default:
            throw TokenKeyError(.unsupportedKeyType("a PEM \"\(block.label.prefix(40))\""))
        }
    }
}

/// The first `-----BEGIN …-----` … `-----END …-----` block of a PEM file (RFC 7468).
struct PEMBlock {
    static let begin = Array("-----BEGIN ".utf8)

    /// The label between `BEGIN ` and the dashes: `PUBLIC KEY`.
    let label: String
    /// The block alone, lines ending in `"\n"`, for swift-crypto's PEM parser.
    let text: String
    /// The DER the block's base64 decodes to.
    let der: [UInt8]

    init(_ contents: [UInt8]) throws(TokenKeyError) {
        guard let text = String(validating: contents, as: UTF8.self) else {
            throw TokenKeyError(.malformedPEM("it is not text"))
        }
        let lines = text.split(omittingEmptySubsequences: true) { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        guard let first = lines.first, first.hasPrefix("-----BEGIN "), first.hasSuffix("-----"), first.count > 16
        else {
            throw TokenKeyError(.malformedPEM("its first line is not -----BEGIN …-----"))
        }
        let label = String(first.dropFirst(11).dropLast(5))
        let end = "-----END \(label)-----"
        guard let endIndex = lines.firstIndex(of: end) else {
            throw TokenKeyError(.malformedPEM("it has no \(end) line"))
        }
        let body = lines[1..<endIndex]
        guard let der = Data(base64Encoded: body.joined()), !der.isEmpty else {
            throw TokenKeyError(.malformedPEM("its body is not base64"))
        }
        self.label = label
        self.der = Array(der)
        self.text = ([first] + body + [end]).joined(separator: "\n") + "\n"
    }

    /// The key's algorithm, from the object identifier in its DER (SPKI and PKCS #8 both carry it
    /// near the start); used to name what listd refuses, the parsing itself is swift-crypto's.
    var keyKind: KeyKind {
        let head = der.prefix(40)
        for kind in KeyKind.allCases where kind.oid.isEmpty == false {
            if head.firstRange(of: kind.oid) != nil { return kind }
        }
        return .unknown
    }

    enum KeyKind: CaseIterable {
        case ed25519, rsa, rsaPSS, ec, x25519, ed448, x448, unknown

        /// The DER encoding (tag, length, value) of the algorithm's object identifier.
        var oid: [UInt8] {
            switch self {
            case .ed25519: [0x06, 0x03, 0x2B, 0x65, 0x70]  // 1.3.101.112
            case .x25519: [0x06, 0x03, 0x2B, 0x65, 0x6E]  // 1.3.101.110
            case .x448: [0x06, 0x03, 0x2B, 0x65, 0x6F]  // 1.3.101.111
            case .ed448: [0x06, 0x03, 0x2B, 0x65, 0x71]  // 1.3.101.113
            case .rsa: [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]  // 1.2.840.113549.1.1.1
            case .rsaPSS: [0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x0A]  // 1.2.840.113549.1.1.10
            case .ec: [0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]  // 1.2.840.10045.2.1
            case .unknown: []
            }
        }

        var name: String {
            switch self {
            case .ed25519: "an Ed25519 key"
            case .rsa, .rsaPSS: "an RSA key"
            case .ec: "an EC (ECDSA) key"
            case .x25519: "an X25519 key (for key agreement, not signatures)"
            case .ed448: "an Ed448 key"
            case .x448: "an X448 key (for key agreement, not signatures)"
            case .unknown: "a key of an unknown algorithm"
            }
        }
    }
}
