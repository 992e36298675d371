import Dispatch
import Foundation
import Glibc
import HTTP
import POSIXIO
import Synchronization
import Testing

@testable import Server

// Serialized: these tests are synchronous and block on sockets and polls, and
// Swift Testing runs them on the cooperative pool (two threads here). Run side
// by side they held both threads for seconds (stack samples of a full run),
// and async suites beside them missed their deadlines waiting for a thread.
@Suite(.serialized) struct HTTPServerTests {
    @Test func keepAliveServesSeveralRequestsOnOneConnection() throws {
        let (server, port) = try startServer { request, responder in
            responder.respond(ok("path \(request.path) from \(request.remoteAddress.hasPrefix("127.0.0.1:"))"))
        }
        defer { stop(server) }
        let client = try TestClient(port: port)
        for index in 0..<3 {
            client.send("GET /r\(index) HTTP/1.1\r\nHost: x\r\n\r\n")
            let reply = try client.readReply()
            #expect(reply.status == 200)
            #expect(reply.text == "path /r\(index) from true")
            #expect(reply.header("connection") == nil)
            #expect(reply.header("date") != nil)
        }
        #expect(server.stats.acceptedTotal == 1)
    }

    @Test func aSecondServerOnABusyPortIsRefused() throws {
        let (first, port) = try startServer { _, responder in responder.respond(ok("first")) }
        defer { stop(first) }
        // SO_REUSEPORT would let the second bind and steal half the connections.
        #expect(throws: SystemError(call: "bind", errno: EADDRINUSE)) {
            _ = try startServer({ $0.port = port }) { _, responder in responder.respond(ok("second")) }
        }
        let client = try TestClient(port: port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try client.readReply().text == "first")
    }

    @Test func connectionAfterALongIdleIsNotTimedOutAtOnce() throws {
        // With no timers pending a loop sleeps in epoll_wait without limit;
        // a connection accepted when it wakes must get a head timer measured
        // from then, not from before the sleep (it used to be closed unread).
        let (server, port) = try startServer({ $0.eventLoops = 1 }) { _, responder in responder.respond(ok("fine")) }
        defer { stop(server) }
        usleep(400_000)  // twice the head timeout, with nothing to do
        for _ in 0..<2 {
            let client = try TestClient(port: port)
            client.send("GET /after-idle HTTP/1.1\r\nHost: x\r\n\r\n")
            let reply = try client.readReply()
            #expect(reply.status == 200)
            #expect(reply.text == "fine")
        }
    }

    @Test func pipelinedResponsesComeInRequestOrder() throws {
        let (server, port) = try startServer { request, responder in
            if request.path == "/slow" {
                // A thread of its own, not Dispatch's global queue: other suites
                // (ReactiveCore's stress tests) fill that queue while this runs.
                Thread.detachNewThread {
                    usleep(50_000)
                    responder.respond(ok("slow"))
                }
            } else {
                responder.respond(ok(String(request.path.dropFirst())))
            }
        }
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send(
            "GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try client.readReply().text == "slow")
        #expect(try client.readReply().text == "b")
        #expect(try client.readReply().text == "c")
    }

    @Test func expectContinueGets100BeforeTheBody() throws {
        let (server, port) = try startServer { request, responder in
            responder.respond(ok("got " + String(decoding: request.body, as: UTF8.self)))
        }
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        let interim = try client.readReply()
        #expect(interim.status == 100)
        client.send("hello")
        let reply = try client.readReply()
        #expect(reply.status == 200)
        #expect(reply.text == "got hello")
    }

    @Test func headGetsGetsHeadersWithoutBody() throws {
        let (server, port) = try startServer { _, responder in
            responder.respond(ok("twelve bytes"))
        }
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send("HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try client.readReply(bodyless: true)
        #expect(head.status == 200)
        #expect(head.header("content-length") == "12")
        // The next response starts right after the head: no body bytes were sent.
        let get = try client.readReply()
        #expect(get.text == "twelve bytes")
    }

    @Test func slowHeadGets408ProblemAndClose() throws {
        let (server, port) = try startServer { _, responder in responder.respond(ok("x")) }
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send("GET / HTTP/1.1\r\nHo")
        let reply = try client.readReply()
        #expect(reply.status == 408)
        // The server knows no application's error format: a neutral plain body.
        #expect(reply.header("content-type") == "text/plain; charset=utf-8")
        #expect(reply.header("connection") == "close")
        #expect(!reply.text.contains("listd"))
        #expect(reply.text.hasSuffix("\n"))
        #expect(client.closesWithoutMoreBytes())
        #expect(server.stats.requestTimeouts >= 1)
    }

    @Test func stalledBodyGets408() throws {
        let (server, port) = try startServer { _, responder in responder.respond(ok("x")) }
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        let reply = try client.readReply()
        #expect(reply.status == 408)
        #expect(reply.text.contains("body"))
    }

    @Test func idleKeepAliveConnectionIsClosedSilently() throws {
        let (server, port) = try startServer { _, responder in responder.respond(ok("x")) }
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try client.readReply().status == 200)
        let start = System.monotonicNanoseconds()
        #expect(client.closesWithoutMoreBytes())
        let waited = System.monotonicNanoseconds() - start
        #expect(waited >= 200_000_000)
    }

    @Test func parseErrorsAreRefusalsWithTheDetail() throws {
        let (server, port) = try startServer { _, responder in responder.respond(ok("x")) }
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send("GET / HTTP/1.1\r\n\r\n")
        let reply = try client.readReply()
        #expect(reply.status == 400)
        #expect(reply.header("content-type") == "text/plain; charset=utf-8")
        #expect(reply.text.contains("Host"))
        #expect(client.closesWithoutMoreBytes())
    }

    @Test func theApplicationRendersTheServersRefusals() throws {
        let (server, port) = try startServer(
            {
                $0.maxConnections = 1; $0.eventLoops = 1
            }, handling: BrandedRefusalHandler())
        defer { stop(server) }
        let slow = try TestClient(port: port)
        slow.send("GET / HTTP/1.1\r\nHo")
        let timeout = try slow.readReply()
        #expect(timeout.status == 408)
        #expect(timeout.header("content-type") == "application/x-branded")
        #expect(timeout.text.hasPrefix("branded 408: "))
        #expect(slow.closesWithoutMoreBytes())
        #expect(eventually { server.stats.openConnections == 0 })
        let first = try TestClient(port: port)
        first.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try first.readReply().status == 200)
        let second = try TestClient(port: port)
        second.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let refused = try second.readReply()
        #expect(refused.status == 503)
        #expect(refused.text.hasPrefix("branded 503: "))
        // The server still adds what HTTP needs to the application's answer.
        #expect(refused.header("retry-after").flatMap { Int($0) } != nil)
    }

    @Test func connectionLimitAnswers503WithRetryAfter() throws {
        let (server, port) = try startServer({
            $0.maxConnections = 2; $0.eventLoops = 1
        }) { _, responder in
            responder.respond(ok("x"))
        }
        defer { stop(server) }
        let first = try TestClient(port: port)
        let second = try TestClient(port: port)
        for client in [first, second] {
            client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readReply().status == 200)
        }
        let third = try TestClient(port: port)
        third.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = try third.readReply()
        #expect(reply.status == 503)
        let retryAfter = try #require(reply.header("retry-after").flatMap { Int($0) })
        #expect((1...10).contains(retryAfter))
        #expect(reply.text.contains("connection limit"))
        #expect(third.closesWithoutMoreBytes())
        #expect(server.stats.rejectedOverCapacity == 1)
        // The limit counts open connections: after one closes, a new one is served.
        _ = consume first
        #expect(eventually { server.stats.openConnections == 1 })
        let fourth = try TestClient(port: port)
        fourth.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try fourth.readReply().status == 200)
    }

    @Test func clientLeavingWhileParkedFiresCancel() throws {
        let cancelled = Counter()
        let parkedResponders = Recorder<Responder>()
        let (server, port) = try startServer { _, responder in
            responder.onCancel { cancelled.increment() }
            parkedResponders.append(responder)
        }
        defer { stop(server) }
        do {
            let client = try TestClient(port: port)
            client.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(eventually { server.stats.parkedRequests == 1 })
        }
        #expect(eventually { cancelled.value == 1 })
        #expect(server.stats.parkedRequests == 0)
        let responder = try #require(parkedResponders.all.first)
        #expect(responder.isCancelled)
        // Registering after the fact runs at once; answering is ignored.
        let late = Counter()
        responder.onCancel { late.increment() }
        #expect(late.value == 1)
        responder.respond(ok("too late"))
    }

    @Test func deferredAnswerFromAnotherThread() throws {
        let (server, port) = try startServer { _, responder in
            Thread.detachNewThread { responder.respond(ok("later")) }
        }
        defer { stop(server) }
        let client = try TestClient(port: port)
        for _ in 0..<3 {
            client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(try client.readReply().text == "later")
        }
        #expect(server.stats.parkedRequests == 0)
    }

    @Test func slowReaderCannotMakeTheServerBufferWithoutBound() throws {
        let body = [UInt8](repeating: UInt8(ascii: "z"), count: 256 * 1024)
        let handled = Counter()
        let (server, port) = try startServer({ $0.outputHighWaterMark = 64 * 1024 }) { _, responder in
            handled.increment()
            responder.respond(Response(status: .ok, body: body))
        }
        defer { stop(server) }
        let client = try TestClient(port: port, receiveBuffer: 16 * 1024)
        let requests = 100
        client.send(String(repeating: "GET / HTTP/1.1\r\nHost: x\r\n\r\n", count: requests))
        usleep(300_000)
        // Socket buffers hold a few responses; the server stops processing beyond its mark.
        let whileStalled = handled.value
        #expect(whileStalled < 60)
        #expect(whileStalled >= 1)
        for _ in 0..<requests {
            let reply = try client.readReply()
            #expect(reply.body.count == body.count)
        }
        #expect(handled.value == requests)
    }

    @Test func connectionCloseFromClientAndFromHandler() throws {
        let (server, port) = try startServer { request, responder in
            if request.path == "/bye" {
                responder.respond(ok("bye", headers: ["Connection": "close"]))
            } else {
                responder.respond(ok("hi"))
            }
        }
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let reply = try client.readReply()
        #expect(reply.header("connection") == "close")
        #expect(client.closesWithoutMoreBytes())

        let other = try TestClient(port: port)
        other.send("GET /bye HTTP/1.1\r\nHost: x\r\n\r\n")
        let bye = try other.readReply()
        #expect(bye.text == "bye")
        #expect(bye.header("connection") == "close")
        #expect(other.closesWithoutMoreBytes())
    }

    @Test func http10KeepsAliveOnlyWhenAsked() throws {
        let (server, port) = try startServer { _, responder in responder.respond(ok("old")) }
        defer { stop(server) }
        let plain = try TestClient(port: port)
        plain.send("GET / HTTP/1.0\r\n\r\n")
        let reply = try plain.readReply()
        #expect(reply.text == "old")
        #expect(reply.header("connection") == "close")
        #expect(plain.closesWithoutMoreBytes())

        let asking = try TestClient(port: port)
        for _ in 0..<2 {
            asking.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            let kept = try asking.readReply()
            #expect(kept.header("connection")?.lowercased() == "keep-alive")
        }
    }

    @Test func streamedResponseIsChunked() throws {
        let (server, port) = try startServer { _, responder in
            let stream = responder.startStream(Response(status: .ok, headers: ["Content-Type": "text/event-stream"]))
            stream.write(Array("data: one\n\n".utf8))
            Thread.detachNewThread {
                usleep(20_000)
                stream.write(Array("data: two\n\n".utf8))
                stream.finish()
                stream.write(Array("ignored".utf8))
            }
        }
        defer { stop(server) }
        let client = try TestClient(port: port)
        client.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        let reply = try client.readReply()
        #expect(reply.header("transfer-encoding") == "chunked")
        #expect(reply.text == "data: one\n\ndata: two\n\n")
        // The connection stays usable after the stream.
        client.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try client.readReply().text == "data: one\n\ndata: two\n\n")
    }

    /// A response given while a loop has thousands of stream chunks queued
    /// (one commit's events to 10,000 streams) is written before them, not
    /// after: a write's own answer does not wait for its followers' events.
    @Test func aResponseOvertakesStreamChunksQueuedBeforeIt() throws {
        let order = Recorder<String>()
        let stream = Mutex<ResponseStream?>(nil)
        let waiting = Mutex<Responder?>(nil)
        let hold = LoopHold()
        let (server, port) = try startServer({ $0.eventLoops = 1 }) { request, responder in
            switch request.path {
            case "/stream":
                let started = responder.startStream(Response(status: .ok, headers: [:]))
                stream.withLock { $0 = started }
            case "/wait":
                waiting.withLock { $0 = responder }
            case "/mark":
                // Runs on the loop right after the /wait answer before it on the connection is written.
                order.append("mark")
                responder.respond(ok("mark"))
            default:
                // Holds the one loop while the test queues chunks and an answer for it.
                hold.holdLoop(responder)
            }
        }
        defer { stop(server) }
        // Runs before stop (defers run in reverse): the loop is never left held.
        defer { hold.release() }
        let streaming = try TestClient(port: port)
        streaming.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        let waiter = try TestClient(port: port)
        waiter.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\nGET /mark HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(eventually { stream.withLock { $0 != nil } && waiting.withLock { $0 != nil } })
        let blocker = try hold.hold(port: port)

        let chunks = 1_000
        let output = try #require(stream.withLock { $0 })
        let responder = try #require(waiting.withLock { $0 })
        for index in 0..<chunks {
            output.write(Array("data: \(index)\n\n".utf8), whenFlushed: { order.append("chunk") })
        }
        responder.respond(ok("answered"))
        hold.release()

        #expect(try waiter.readReply().text == "answered")
        #expect(try waiter.readReply().text == "mark")
        #expect(eventually(5) { order.count == chunks + 1 })
        let chunksBefore = order.all.firstIndex(of: "mark") ?? chunks
        // The loop looks at its responses before each batch it takes and every
        // answerCheckInterval messages within one; before this change, all 1,000.
        #expect(chunksBefore <= EventLoopCore.answerCheckInterval, "the answer waited behind \(chunksBefore) chunks")
        #expect(try blocker.readReply().text == "released")
    }

    /// A direct response given while a loop has hundreds of bulk responses
    /// queued (one commit's answers to every long-poll parked on its list) is
    /// written before them: a write's own answer does not wait for its
    /// followers' long-poll answers.
    @Test func aDirectResponseOvertakesBulkResponsesQueuedBeforeIt() throws {
        let order = Recorder<String>()
        let parked = Recorder<Responder>()
        let waiting = Mutex<Responder?>(nil)
        let hold = LoopHold()
        let (server, port) = try startServer({ $0.eventLoops = 1 }) { request, responder in
            switch request.path {
            case "/park":
                parked.append(responder)
            case "/wait":
                waiting.withLock { $0 = responder }
            case "/mark-bulk", "/mark":
                // Runs on the loop right after the answer before it on the connection is written.
                order.append(request.path == "/mark" ? "direct" : "bulk")
                responder.respond(ok("mark"))
            default:
                // Holds the one loop while the test queues the answers for it.
                hold.holdLoop(responder)
            }
        }
        defer { stop(server) }
        // Runs before stop (defers run in reverse): the loop is never left held.
        defer { hold.release() }
        let count = 200
        let followers = try (0..<count).map { _ in try TestClient(port: port) }
        for follower in followers {
            follower.send("GET /park HTTP/1.1\r\nHost: x\r\n\r\nGET /mark-bulk HTTP/1.1\r\nHost: x\r\n\r\n")
        }
        let writer = try TestClient(port: port)
        writer.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\nGET /mark HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(eventually { parked.count == count && waiting.withLock { $0 != nil } })
        let blocker = try hold.hold(port: port)

        for responder in parked.all { responder.respond(ok("bulk"), urgency: .bulk) }
        let responder = try #require(waiting.withLock { $0 })
        responder.respond(ok("answered"))
        hold.release()

        #expect(try writer.readReply().text == "answered")
        #expect(try writer.readReply().text == "mark")
        for follower in followers {
            #expect(try follower.readReply().text == "bulk")
            #expect(try follower.readReply().text == "mark")
        }
        #expect(order.count == count + 1)
        let bulkBefore = order.all.firstIndex(of: "direct") ?? count
        // Before bulk answers had their own urgency, all 200 went first.
        #expect(bulkBefore <= EventLoopCore.answerCheckInterval, "the answer waited behind \(bulkBefore) bulk answers")
        #expect(try blocker.readReply().text == "released")
    }

    @Test func aStreamChunkReportsWhenItReachedTheSocket() throws {
        let flushed = Recorder<Int>()
        let (server, port) = try startServer { _, responder in
            let stream = responder.startStream(Response(status: .ok, headers: ["Content-Type": "text/event-stream"]))
            // Far more than the socket buffers hold while the client does not read.
            stream.write(
                [UInt8](repeating: 0x61, count: 16 << 20),
                whenFlushed: {
                    flushed.append(1)
                    stream.finish()
                })
        }
        defer { stop(server) }
        let client = try TestClient(port: port, receiveBuffer: 4096, timeoutSeconds: 20)
        client.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(!eventually(0.3) { flushed.count > 0 }, "reported before the client read it")
        let reply = try client.readReply()
        #expect(reply.body.count == 16 << 20)
        #expect(flushed.count == 1)
    }

    @Test func gracefulShutdownAnswersParkedRequestsThroughTheHook() throws {
        let parked = Recorder<Responder>()
        let (server, port) = try startServer { _, responder in parked.append(responder) }
        server.onShutdown {
            for responder in parked.all { responder.respond(ok("shutting down")) }
        }
        let clients = try (0..<3).map { _ in try TestClient(port: port) }
        for client in clients { client.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n") }
        #expect(eventually { server.stats.parkedRequests == 3 })
        let idle = try TestClient(port: port)
        #expect(eventually { server.stats.openConnections == 4 })

        let start = System.monotonicNanoseconds()
        server.shutdown(drainTimeout: .seconds(2))
        for client in clients {
            let reply = try client.readReply()
            #expect(reply.text == "shutting down")
            #expect(reply.header("connection") == "close")
        }
        #expect(idle.closesWithoutMoreBytes())
        server.waitUntilStopped()
        #expect(System.monotonicNanoseconds() - start < 1_500_000_000)
        #expect(server.stats.openConnections == 0)
        // No longer accepting.
        #expect(throws: TestClient.Failure.self) { try TestClient(port: port) }
    }

    @Test func drainTimeoutClosesWhatIsLeftAndCancels() throws {
        let cancelled = Counter()
        let (server, port) = try startServer { _, responder in
            responder.onCancel { cancelled.increment() }
        }
        let client = try TestClient(port: port)
        client.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(eventually { server.stats.parkedRequests == 1 })
        let start = System.monotonicNanoseconds()
        server.shutdown(drainTimeout: .milliseconds(200))
        server.waitUntilStopped()
        let elapsed = System.monotonicNanoseconds() - start
        // At the drain timeout, not at the parked request's end (it never ends): the upper
        // bound leaves room for a loaded run, where the loop's thread may wait for a core.
        #expect(elapsed >= 150_000_000 && elapsed < 10_000_000_000)
        #expect(cancelled.value == 1)
        #expect(client.closesWithoutMoreBytes())
    }

    @Test func shutdownWhileAnotherThreadWaits() throws {
        let (server, port) = try startServer { _, responder in responder.respond(ok("x")) }
        let stopped = Counter()
        let waiter = try System.spawnThread(name: "test-waiter") {
            server.waitUntilStopped()
            stopped.increment()
        }
        let client = try TestClient(port: port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try client.readReply().status == 200)
        usleep(20_000)
        #expect(stopped.value == 0)
        server.shutdown(drainTimeout: .milliseconds(300))
        System.join(waiter)
        #expect(stopped.value == 1)
        #expect(client.closesWithoutMoreBytes())
    }
}
