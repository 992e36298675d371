import Foundation
import Tokens

// The cost of checking one signed token, as listd does for each request that
// carries one (on the event loop, from the head): HS256 and EdDSA, each
// verified N times (release build: `swift run -c release TokenBenchmarks [N]`).

let count = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 100_000 : 100_000
let secret = Array("token-benchmark-secret-of-at-least-32-bytes".utf8)
let generated = try TokenKey.generate(.eddsa)
let keys: [(String, TokenKey)] = [
    ("HS256", try await TokenKey(contents: secret)),
    ("EdDSA", try await TokenKey(contents: generated.keyFile)),
]
let now = Date()
let claims = TokenClaims(
    subject: "u42", lists: ["u42-*", "shared"].compactMap(ListPattern.init), rights: [.read, .write],
    view: "where=owner:u42", expires: now.addingTimeInterval(3600))
for (name, key) in keys {
    let token = try TokenMinter(key: key).mint(claims, issuedAt: now)
    let verifier = TokenVerifier(key: key)
    var accepted = 0
    for _ in 0..<min(1_000, count) { if case .success = verifier.verify(token, now: now) { accepted += 1 } }
    let start = ContinuousClock.now
    for _ in 0..<count {
        if case .success = verifier.verify(token, now: now) { accepted += 1 }
    }
    let elapsed = ContinuousClock.now - start
    let micros = elapsed / .microseconds(1) / Double(count)
    print(
        "\(name): \(String(format: "%.2f", micros)) µs per verification (\(count) tokens of \(token.utf8.count) bytes)")
    precondition(accepted == count + min(1_000, count), "a valid token was refused")
}
