import Postgres
import Testing

/// Every form a PostgreSQL secret can take in a connection string is
/// printed as `***`, and the rest stays readable.
@Suite struct ConnectionStringTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var text: String
        var secrets: [String]
        var expected: String
        var testDescription: String { text }
    }

    static let cases: [Case] = [
        Case(
            text: "postgres://u:hunter2@h:5432/db", secrets: ["hunter2"],
            expected: "postgres://u:***@h:5432/db"),
        Case(
            text: "postgresql://u:hunter2@h/db", secrets: ["hunter2"], expected: "postgresql://u:***@h/db"),
        Case(
            text: "POSTGRES://u:hunter2@h/db", secrets: ["hunter2"], expected: "POSTGRES://u:***@h/db"),
        Case(
            text: "postgres://u:hun%40ter2@h/db", secrets: ["hun%40ter2", "hun@ter2"],
            expected: "postgres://u:***@h/db"),
        Case(
            text: "postgres://u:hun@ter2@h/db", secrets: ["hun@ter2"], expected: "postgres://u:***@h/db"),
        Case(
            text: "postgres://u@127.0.0.1:1/db?password=hunter2&sslpassword=s3cret",
            secrets: ["hunter2", "s3cret"],
            expected: "postgres://u@127.0.0.1:1/db?password=***&sslpassword=***"),
        Case(
            text: "postgres://h/db?sslmode=require&PassWord=hunter2&application_name=listd",
            secrets: ["hunter2"],
            expected: "postgres://h/db?sslmode=require&PassWord=***&application_name=listd"),
        Case(
            text: "postgres://h/db?pass%77ord=hunter2", secrets: ["hunter2"],
            expected: "postgres://h/db?pass%77ord=***"),
        Case(
            text: "postgres://h/db?password=hun%26ter2&password=s3cret", secrets: ["hun%26ter2", "hun&ter2", "s3cret"],
            expected: "postgres://h/db?password=***&password=***"),
        Case(
            text: "postgres://u:pw1@h/db?password=pw2&my_password_file=pw3", secrets: ["pw1", "pw2", "pw3"],
            expected: "postgres://u:***@h/db?password=***&my_password_file=***"),
        Case(
            text: "host=h password=hunter2 user=u", secrets: ["hunter2"], expected: "host=h password=*** user=u"),
        Case(
            text: "host=h password = hunter2 dbname=db", secrets: ["hunter2"],
            expected: "host=h password = *** dbname=db"),
        Case(
            text: #"host=h password=hunter2 sslpassword='a b\' c' user=u"#, secrets: ["hunter2", "a b", "' c"],
            expected: "host=h password=*** sslpassword=*** user=u"),
        Case(
            text: #"host=h password='it''s' user=u"#, secrets: ["it"],
            expected: #"host=h password=***'s' user=u"#),
        Case(
            text: #"host=h password=hun\ ter2 port=5432"#, secrets: ["hun", "ter2"],
            expected: "host=h password=*** port=5432"),
        Case(
            text: "host=h password='never closed", secrets: ["never closed"], expected: "host=h password=***"),
        Case(
            text: "host=h PASSWORD=hunter2", secrets: ["hunter2"], expected: "host=h PASSWORD=***"),
        Case(
            text: "dbname=postgres://u:hunter2@h/db?sslpassword=s3cret host=x", secrets: ["hunter2", "s3cret"],
            expected: "dbname='postgres://u:***@h/db?sslpassword=***' host=x"),
        Case(
            text: "mysql://u:hunter2@h/db?password=s3cret", secrets: ["hunter2", "s3cret"],
            expected: "mysql://u:***@h/db?password=***"),
        Case(text: "host=h user=u dbname=db", secrets: [], expected: "host=h user=u dbname=db"),
        Case(
            text: "postgres://u@h:5432/db?sslmode=disable", secrets: [],
            expected: "postgres://u@h:5432/db?sslmode=disable"),
    ]

    @Test(arguments: cases)
    func everySecretIsMaskedAndTheRestIsKept(_ test: Case) {
        let redacted = Connection.redacted(test.text)
        #expect(redacted == test.expected)
        for secret in test.secrets {
            #expect(!redacted.contains(secret), "\(secret) in \(redacted)")
        }
    }

    @Test(arguments: cases)
    func aMessageQuotingTheStringLosesItsSecrets(_ test: Case) {
        // libpq quotes what it could not read (`invalid percent-encoded token: "…"`).
        let message = "could not parse \"\(test.text)\""
        let scrubbed = ConnectionString.scrub(message, secretsOf: test.text)
        for secret in test.secrets where !secret.isEmpty {
            #expect(!scrubbed.contains(secret), "\(secret) in \(scrubbed)")
        }
    }

    @Test func libpqRefusingAMalformedEscapeDoesNotEchoThePassword() {
        let url = "postgres://u:%zzhunter2@127.0.0.1:1/db?sslpassword=s%3cret%zz"
        var message = ""
        do {
            _ = try Connection(url: url)
        } catch {
            message = "\(error)"
        }
        #expect(!message.isEmpty)
        #expect(!message.contains("hunter2"), "\(message)")
        #expect(!message.contains("s%3cret") && !message.contains("s<ret"), "\(message)")
    }
}
