import Foundation
import Glibc

// MARK: unauth-flood: connections that announce large bodies without a token

/// `unauth-flood PORT PID COUNT MIB SECONDS`: opens COUNT connections, each
/// sending `POST /lists` with `Content-Length: MIB MiB` and no token, then
/// (unlike a polite client, without waiting for `100 Continue`) pushing body
/// bytes as fast as the socket takes them for SECONDS. Samples listd's VmRSS
/// every 50 ms and prints its growth at the peak, and how the connections
/// ended: what listd answered (401 expected) and how many it closed.
func unauthenticatedFlood(port: Int, pid: Int, count: Int, mebibytes: Int, seconds: Double) {
    _ = raiseFileLimit()
    let rssBefore = residentKiB(pid: pid)
    let connections = (0..<count).map { _ in HTTPConnection(port: port) }
    let head =
        "POST /lists HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        + "Content-Length: \(mebibytes << 20)\r\n\r\n"
    for connection in connections {
        connection.sendRaw(head)
        _ = fcntl(connection.fd, F_SETFL, fcntl(connection.fd, F_GETFL) | O_NONBLOCK)
    }
    let chunk = [UInt8](repeating: UInt8(ascii: "a"), count: 1 << 16)
    var sent = [Int](repeating: 0, count: count)
    var answers = [String](repeating: "", count: count)
    var closed = [Bool](repeating: false, count: count)
    var peak = rssBefore
    var nextSample = 0.0
    var buffer = [UInt8](repeating: 0, count: 4096)
    let deadline = monotonicSeconds() + seconds
    while monotonicSeconds() < deadline {
        var progressed = false
        for index in connections.indices where !closed[index] {
            let fd = connections[index].fd
            if sent[index] < mebibytes << 20 {
                let wrote = chunk.withUnsafeBytes {
                    send(fd, $0.baseAddress, min($0.count, (mebibytes << 20) - sent[index]), Int32(MSG_NOSIGNAL))
                }
                if wrote > 0 {
                    sent[index] += wrote
                    progressed = true
                } else if wrote < 0, errno != EAGAIN, errno != EWOULDBLOCK {
                    closed[index] = true
                }
            }
            let read = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if read > 0, answers[index].isEmpty {
                answers[index] = String(decoding: buffer[0..<min(read, 12)], as: UTF8.self)
            } else if read == 0 {
                closed[index] = true
            }
        }
        let now = monotonicSeconds()
        if now >= nextSample {
            peak = max(peak, residentKiB(pid: pid))
            nextSample = now + 0.05
        }
        if !progressed { usleep(1_000) }
    }
    let statuses = Dictionary(grouping: answers.map { $0.isEmpty ? "no answer" : String($0.dropFirst(9).prefix(3)) }) {
        $0
    }
    .map { "\($0.key) ×\($0.value.count)" }.sorted().joined(separator: ", ")
    let total = sent.reduce(0, +)
    print(
        "unauth-flood: \(count) connections announcing \(mebibytes) MiB each sent \(total >> 20) MiB in \(Int(seconds)) s; "
            + "answers: \(statuses); closed by listd: \(closed.filter { $0 }.count)")
    print(
        "listd VmRSS before: \(rssBefore) KiB, peak: \(peak) KiB, growth: \((peak - rssBefore) / 1024) MiB (goal < 64)")
    withExtendedLifetime(connections) {}
}
