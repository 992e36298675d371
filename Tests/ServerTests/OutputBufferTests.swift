import Glibc
import Testing

@testable import Server

@Suite struct OutputBufferTests {
    /// Collects what the vectors point at, as a write would see it.
    static func vectorBytes(_ buffer: OutputBuffer) -> [UInt8] {
        buffer.withVectors { vectors in
            var bytes: [UInt8] = []
            for vector in vectors {
                guard let base = vector.iov_base else { continue }
                bytes.append(contentsOf: UnsafeRawBufferPointer(start: base, count: vector.iov_len))
            }
            return bytes
        }
    }

    @Test func partialWritesResumeWhereTheyStopped() {
        var buffer = OutputBuffer()
        buffer.append(Array("HEAD".utf8))
        buffer.append([])
        buffer.append(Array("body!".utf8))
        #expect(buffer.pendingBytes == 9)
        #expect(Self.vectorBytes(buffer) == Array("HEADbody!".utf8))
        buffer.consume(2)
        #expect(Self.vectorBytes(buffer) == Array("ADbody!".utf8))
        buffer.consume(3)
        #expect(Self.vectorBytes(buffer) == Array("ody!".utf8))
        buffer.consume(4)
        #expect(buffer.isEmpty)
        #expect(Self.vectorBytes(buffer).isEmpty)
    }

    @Test func oneWriteTakesAtMostTheVectorLimit() {
        var buffer = OutputBuffer()
        for index in 0..<(OutputBuffer.maximumVectors + 4) { buffer.append([UInt8(index)]) }
        let count = buffer.withVectors { $0.count }
        #expect(count == OutputBuffer.maximumVectors)
        #expect(buffer.pendingBytes == OutputBuffer.maximumVectors + 4)
    }
}
