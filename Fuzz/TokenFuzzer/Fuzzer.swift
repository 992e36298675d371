// libFuzzer target: signed-token verification (module Tokens). See Fuzz/README.md.
//
// Every input is verified as it is, by an HS256 verifier and an EdDSA verifier. An input holding
// a NUL byte is also read as header JSON, NUL, payload JSON: the harness signs that with each key
// and verifies the result, so the header and claim checks are reached behind a valid signature.
//
// Beyond "never crashes": an accepted token verifies again to the same claims; an as-is input is
// accepted only if swift-crypto, asked directly, agrees the signature is the key's; no token is
// accepted by both keys; and accepted claims keep the contract (lists and rights not empty, a
// view not empty, exp not past).

import Crypto
import Dispatch
import Foundation
import Glibc
import Synchronization
import Tokens

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokens(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    let keys = TokenFuzzer.keys
    let hs256 = keys.hs256.verify(bytes, now: TokenFuzzer.now)
    let eddsa = keys.eddsa.verify(bytes, now: TokenFuzzer.now)
    if hs256.isAccepted && eddsa.isAccepted {
        TokenFuzzer.fail("both keys accepted \(TokenFuzzer.show(bytes))")
    }
    TokenFuzzer.check(hs256, of: bytes, by: keys.hs256, signed: TokenFuzzer.hmacSigns(bytes))
    TokenFuzzer.check(eddsa, of: bytes, by: keys.eddsa, signed: TokenFuzzer.ed25519Signs(bytes))

    if let nul = bytes.firstIndex(of: 0) {
        let header = bytes[..<nul]
        let payload = bytes[(nul + 1)...]
        let input = TokenFuzzer.base64URL(header) + [UInt8(ascii: ".")] + TokenFuzzer.base64URL(payload)
        let hmac = HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: TokenFuzzer.secret))
        let hmacToken = input + [UInt8(ascii: ".")] + TokenFuzzer.base64URL(Array(hmac))
        TokenFuzzer.check(
            keys.hs256.verify(hmacToken, now: TokenFuzzer.now), of: hmacToken, by: keys.hs256, signed: true)
        if let signature = try? TokenFuzzer.privateKey.signature(for: input) {
            let edToken = input + [UInt8(ascii: ".")] + TokenFuzzer.base64URL(Array(signature))
            TokenFuzzer.check(
                keys.eddsa.verify(edToken, now: TokenFuzzer.now), of: edToken, by: keys.eddsa, signed: true)
        }
    }
    return 0
}

enum TokenFuzzer {
    /// Throwaway keys, fixed so the seed corpus's tokens stay valid. Never use them anywhere else.
    static let secret = Array("listd-fuzz-hs256-secret-do-not-use-anywhere-0001".utf8)
    static let privateKey: Curve25519.Signing.PrivateKey = {
        do {
            return try Curve25519.Signing.PrivateKey(rawRepresentation: (1...32).map { UInt8($0) })
        } catch {
            fail("cannot make the fuzzer's Ed25519 key: \(error)")
        }
    }()
    /// The fuzzer's "now": 2027-01-15. The seed tokens expire in 2100.
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    struct Verifiers: Sendable {
        var hs256: TokenVerifier
        var eddsa: TokenVerifier
    }

    /// The verifiers, made once. Making a `TokenKey` is async (jwt-kit builds its algorithm on an
    /// actor); libFuzzer calls us on its own thread, outside Swift's thread pool, so waiting here
    /// for a task that runs on the pool cannot starve it.
    static let keys: Verifiers = {
        final class Slot: Sendable { let value = Mutex<Result<Verifiers, TokenKeyError>?>(nil) }
        let slot = Slot()
        let done = DispatchSemaphore(value: 0)
        let publicPEM = Array(privateKey.publicKey.pemRepresentation.utf8)
        Task {
            let result: Result<Verifiers, TokenKeyError>
            do throws(TokenKeyError) {
                let hs256 = try await TokenKey(contents: secret)
                let eddsa = try await TokenKey(contents: publicPEM)
                result = .success(Verifiers(hs256: TokenVerifier(key: hs256), eddsa: TokenVerifier(key: eddsa)))
            } catch {
                result = .failure(error)
            }
            slot.value.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        switch slot.value.withLock({ $0 }) {
        case .success(let verifiers): return verifiers
        case .failure(let error): fail("cannot load the fuzzer's keys: \(error)")
        case nil: fail("the key task ended without a result")
        }
    }()

    /// The invariants for one verification of `token`; `signed` is swift-crypto's own opinion of its signature.
    static func check(
        _ result: Result<TokenClaims, TokenRejection>, of token: [UInt8], by verifier: TokenVerifier, signed: Bool
    ) {
        guard case .success(let claims) = result else { return }
        guard signed else { fail("accepted a token whose signature swift-crypto refuses: \(show(token))") }
        guard verifier.verify(token, now: now) == result else { fail("a second verification differs: \(show(token))") }
        guard !claims.lists.isEmpty, !claims.rights.isEmpty, claims.view?.isEmpty != true else {
            fail("accepted claims the contract refuses: \(show(token))")
        }
        guard claims.expires.timeIntervalSince(now) > -60 else { fail("accepted an expired token: \(show(token))") }
        if claims.rights.contains(.write) && !claims.rights.contains(.read) {
            fail("write without read: \(show(token))")
        }
    }

    /// Whether `token`'s third part is the HMAC-SHA-256 of its first two with the fuzzer's secret.
    static func hmacSigns(_ token: [UInt8]) -> Bool {
        guard let (input, signature) = split(token) else { return false }
        let mac = HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: secret))
        return base64URL(Array(mac)) == signature
    }

    /// Whether `token`'s third part is an Ed25519 signature of its first two by the fuzzer's key.
    static func ed25519Signs(_ token: [UInt8]) -> Bool {
        guard let (input, signature) = split(token), let raw = decodeBase64URL(signature) else { return false }
        return privateKey.publicKey.isValidSignature(raw, for: input)
    }

    /// The signing input (before the second dot) and the signature text (after it).
    static func split(_ token: [UInt8]) -> ([UInt8], [UInt8])? {
        let dots = token.indices.filter { token[$0] == UInt8(ascii: ".") }
        guard dots.count == 2 else { return nil }
        return (Array(token[..<dots[1]]), Array(token[(dots[1] + 1)...]))
    }

    static func base64URL(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let text = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return Array(text.utf8)
    }

    static func decodeBase64URL(_ text: [UInt8]) -> Data? {
        var base64 = String(decoding: text, as: UTF8.self)
            .replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    static func show(_ bytes: [UInt8]) -> String { String(decoding: bytes.prefix(300), as: UTF8.self).debugDescription }

    static func fail(_ message: String) -> Never {
        let text = Array("TokenFuzzer: \(message)\n".utf8)
        _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        abort()
    }
}

extension Result {
    fileprivate var isAccepted: Bool {
        if case .success = self { return true }
        return false
    }
}

// SwiftPM links an executable's `main` to `<module>_main`; here that hands over to libFuzzer's
// driver, with the function above as the target.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@_cdecl("TokenFuzzer_main")
public func TokenFuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var argc = argc
    var argv = argv
    _ = TokenFuzzer.keys  // made before libFuzzer starts its clock
    return LLVMFuzzerRunDriver(&argc, &argv, fuzzTokens)
}
