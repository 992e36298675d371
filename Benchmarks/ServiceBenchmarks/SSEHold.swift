import Foundation
import Glibc

// MARK: sse-hold: event-stream followers held open while something else writes

/// `sse-hold PORT LIST-ID COUNT SECONDS`: opens COUNT event streams on
/// `/lists/{id}/events?since=now` and reads everything
/// they send for SECONDS, so a write benchmark can run beside real followers.
/// Prints how many streams it held and how many `id:` lines (events) they got.
func sseHold(port: Int, list: String, count: Int, seconds: Double) {
    _ = raiseFileLimit()
    let connections = (0..<count).map { _ in HTTPConnection(port: port) }
    for connection in connections {
        connection.sendRaw(
            "GET /lists/\(list)/events?since=now HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
    }
    var descriptors = connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
    var buffer = [UInt8](repeating: 0, count: 65536)
    var events = 0
    var closed = 0
    let deadline = monotonicSeconds() + seconds
    while monotonicSeconds() < deadline {
        let ready = poll(&descriptors, nfds_t(descriptors.count), 100)
        guard ready > 0 else { continue }
        for index in descriptors.indices where descriptors[index].revents != 0 {
            let read = buffer.withUnsafeMutableBytes { recv(descriptors[index].fd, $0.baseAddress, $0.count, 0) }
            if read <= 0 {
                descriptors[index].fd = -1
                closed += 1
                continue
            }
            // Each event carries one "id:" line at a line start.
            for at in 0..<max(0, read - 3)
            where buffer[at] == 10 && buffer[at + 1] == 105 && buffer[at + 2] == 100
                && buffer[at + 3] == 58
            {
                events += 1
            }
        }
    }
    print("sse-hold: \(count) streams for \(Int(seconds)) s, \(events) events, \(closed) closed by the server")
    withExtendedLifetime(connections) {}
}
