// The Jinja interpreter on its own: language features one at a time (expected texts
// checked against Python's jinja2 configured as in make_expected.py), and the errors an
// untrusted template must end in: syntax, unknown names, raise_exception and the limits
// on recursion, steps and output.
#include "chat_template_fixtures.h"

#include "arbor/jinja.h"

#include <QDate>
#include <QtTest>

using arbor::jinja::CompiledTemplate;
using arbor::jinja::JinjaError;
using arbor::jinja::Object;
using arbor::jinja::Value;

namespace {

std::string render(const std::string& source) {
    Value context{Object{}};
    context.set("d", Value(Object{{"a", Value(1)}}));
    return CompiledTemplate(source).render(context);
}

std::string error_of(const std::string& source) {
    try {
        (void)render(source);
    } catch (const JinjaError& e) {
        return e.what();
    }
    return "(no error)";
}

std::string repeat(const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
}

} // namespace

class TestJinja : public QObject {
    Q_OBJECT

private slots:
    void renders_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("expected");
        int n = 0;
        auto row = [&](const char* source, const char* expected) {
            QTest::newRow(qPrintable(QString("%1: %2").arg(++n).arg(QString(source).left(40).replace("\n", "\\n"))))
                << QString::fromUtf8(source) << QString::fromUtf8(expected);
        };
        row("{{ 'a' ~ 1 ~ none }}",
            "a1None");
        row("{{ [1, 'x', none, true, \"it's\"] }}",
            "[1, 'x', None, True, \"it's\"]");
        row("{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 1 / 2 }} {{ 2 ** 10 }}",
            "3 -4 2 0.5 1024");
        row("{{ 1.0 }} {{ 2.5 * 2 }} {{ 10 / 4 }} {{ 0.1 + 0.2 }}",
            "1.0 5.0 2.5 0.30000000000000004");
        row("{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ 'F' if loop.first }}{{ 'L' if loop.last }}{% endfor %}",
            "10F2132L");
        row("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
            "6");
        row("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}",
            "21");
        row("{% if false %}a{% elif 0 %}b{% elif [1] %}c{% else %}d{% endif %}",
            "c");
        row("{{ 'héllo'[1:3] }}{{ 'héllo'|length }}{{ 'héllo'[-1] }}{{ [1, 2, 3][::-1] }}",
            "él5o[3, 2, 1]");
        row("{{ '  a b  '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' x  y '.split() }}|{{ 'xxa'.lstrip('x') }}",
            "a b|['a', 'b', '', 'c']|['x', 'y']|a");
        row("{{ {'b': 1, 'a': [true, none, 'é\"\\n']}|tojson }}",
            "{\"b\": 1, \"a\": [true, null, \"é\\\"\\n\"]}");
        row("{{ {'a': [1, {}]}|tojson(indent=2) }}",
            "{\n  \"a\": [\n    1,\n    {}\n  ]\n}");
        row("a\n  {% if true %}\n  x\n  {% endif %}\nb",
            "a\n  x\nb");
        row("a  {%- if true -%}  x  {%- endif -%}  b {{- ' c ' -}} d",
            "axb c d");
        row("{% macro m(a, b='B') %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, b=3) }}",
            "[1B][23]");
        row("{{ x is defined }}{{ x is not defined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}{{ 3 is odd }}",
            "FalseTrueTrueTrueTrueTrue");
        row("{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i > 3 %}{% break %}{% endif %}{{ i }}{% endfor %}",
            "013");
        row("{% for i in [] %}x{% else %}empty{% endfor %}",
            "empty");
        row("{% for i in range(6) if i is even %}{{ i }}{{ loop.length }}{% endfor %}",
            "032343");
        row("{{ [{'r': 'u', 'c': 1}, {'r': 'a', 'c': 2}, {'r': 'u', 'c': 3}]|selectattr('r', 'equalto', 'u')|map(attribute='c')|join(',') }}",
            "1,3");
        row("{{ [{'r': 'u'}, {'r': 'a'}]|rejectattr('r', 'equalto', 'u')|list|length }}",
            "1");
        row("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}{% for k, v in {'c': 3}|items %}{{ k }}{{ v }}{% endfor %}",
            "a=1;b=2;c3");
        row("{{ 'abc'|upper }}{{ 'ABC'|lower }}{{ none|default('d') }}{{ nothing|default('d') }}{{ ''|default('e', true) }}{{ 'hi there'|capitalize }}",
            "ABCabcNonedeHi there");
        row("{{ 'x' in 'xyz' }}{{ 2 in [1, 2] }}{{ 'k' not in {'k': 1} }}{{ 'z' in nothing }}",
            "TrueTrueFalseFalse");
        row("{#- a comment -#}  x {# another #}",
            "x ");
        row("{{ '<think>a</think>b'.split('</think>')[-1] }}{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'a-b'.replace('-', '+') }}",
            "bTrueTruea+b");
        row("{{ d.get('a') }}{{ d.get('z', 'no') }}{{ d['a'] }}{{ d.a }}{{ d.missing }}",
            "1no11");
        row("{% set parts %}x{{ 1 + 1 }}{% endset %}{{ parts }}{{ parts|length }}",
            "x22");
        row("{% set a, b = 1, 2 %}{{ b }}{{ a }}",
            "21");
        row("{{ 'a' if 1 > 2 else 'b' }}{{ not 1 and 2 }}{{ 0 or 'z' }}{{ 1 == 1.0 }}{{ [1] == [1] }}",
            "bFalsezTrueTrue");
        row("{{ '\\u00e9\\x41' }}{{ \"q'\" }}{{ 'ab' 'cd' }}",
            "éAq'abcd");
        row("{{ ['b', 'a']|sort|first }}{{ [1, 2]|last }}{{ [1, 1, 2]|unique|list }}{{ '3'|int + 1 }}{{ -3|abs }}{{ [1, 2]|reverse|list }}",
            "a2[1, 2]43[2, 1]");
    }

    void renders() {
        QFETCH(QString, source);
        QFETCH(QString, expected);
        std::string got;
        try {
            got = render(source.toStdString());
        } catch (const JinjaError& e) {
            QFAIL(e.what());
        }
        QCOMPARE(QString::fromStdString(got), expected);
    }

    void fails_data() {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("message");
        auto row = [](const char* name, const std::string& source, const char* message) {
            QTest::newRow(name) << QString::fromStdString(source) << QString(message);
        };
        row("unterminated if", "{% if x %}a", "missing {% endif %}");
        row("unterminated for", "{% for x in y %}a{% endif %}", "unsupported tag {% endif %}");
        row("unterminated expression", "{{ x ", "unterminated expression {{ ... }}");
        row("unterminated tag", "{% if x", "unterminated tag {% ... %}");
        row("unterminated string", "{{ 'abc }}", "unterminated string literal");
        row("unterminated comment", "a {# never closed", "unterminated comment");
        row("unknown tag", "{% raw %}x{% endraw %}", "unsupported tag {% raw %}");
        row("unknown filter", "{{ 'a'|frobnicate }}", "unknown filter 'frobnicate'");
        row("unknown test", "{{ 1 is frob }}", "unknown test 'frob'");
        row("line number", "\n\n{{ 'a'|nope }}", "template line 3:");
        row("raise_exception", "{{ raise_exception('Roles must alternate') }}", "the template raised an error: Roles must alternate");
        row("attribute of undefined", "{{ none.x.y }}", "is undefined (reading .y)");
        row("calling undefined", "{{ nothing() }}", "'nothing' is undefined (calling it)");
        row("bad operands", "{{ 1 + 'a' }}", "unsupported operand types for +: integer and string");
        row("integer overflow", "{{ 9223372036854775807 + 1 }}", "integer overflow in +");
        row("repetition overflow", "{{ 'ab' * 9223372036854775807 }}", "string repetition too large");
        row("undefined in arithmetic", "{{ nothing + 1 }}", "an undefined value in '+'");
        row("bad syntax", "{{ 1 + }}", "unexpected '}}' in an expression");
        row("unpack", "{% for a, b in [1] %}{% endfor %}", "cannot unpack");
        row("macro recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "macro calls nested deeper than 16");
        row("huge range", "{% for i in range(100000000) %}{% endfor %}", "more than 1000000 steps");
        row("nested loops", "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(10) %}{% endfor %}{% endfor %}{% endfor %}",
            "more than 1000000 steps");
        row("output size", "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", "output larger than 4194304 bytes");
        row("deep parentheses", "{{ " + repeat("(", 5000) + "1" + repeat(")", 5000) + " }}", "nesting deeper than 64");
        row("deep ifs", repeat("{% if true %}", 5000), "nesting deeper than 64");
        row("deep not", "{{ " + repeat("not ", 5000) + "1 }}", "nesting deeper than 64");
        row("context not a dict", "", "");
    }

    void fails() {
        QFETCH(QString, source);
        QFETCH(QString, message);
        if (message.isEmpty()) {
            QVERIFY_THROWS_EXCEPTION(JinjaError, CompiledTemplate("x").render(Value(1)));
            return;
        }
        const std::string error = error_of(source.toStdString());
        QVERIFY2(QString::fromStdString(error).contains(message), error.c_str());
    }

    // The real clock, not the pinned one the fixtures use.
    void strftimeNowIsToday() {
        QCOMPARE(QString::fromStdString(render("{{ strftime_now('%Y-%m-%d') }}")),
                 QDate::currentDate().toString("yyyy-MM-dd"));
    }

    void limitsAreAdjustable() {
        arbor::jinja::Limits small;
        small.max_steps = 10;
        const CompiledTemplate t("{% for i in range(20) %}{{ i }}{% endfor %}", small);
        QVERIFY_THROWS_EXCEPTION(JinjaError, t.render(Value(Object{})));
        QCOMPARE(QString::fromStdString(CompiledTemplate("{% for i in range(20) %}{% endfor %}ok").render(Value(Object{}))), "ok");
    }

    void contextValuesAreShared() {
        // A namespace updated inside a loop is seen after it, as in Python.
        Value context{Object{}};
        context.set("items", Value(arbor::jinja::Array{Value("a"), Value("b")}));
        const std::string out =
            CompiledTemplate("{% set ns = namespace(s='') %}{% for i in items %}{% set ns.s = ns.s + i %}{% endfor %}{{ ns.s }}")
                .render(context);
        QCOMPARE(QString::fromStdString(out), "ab");
    }
};

QTEST_GUILESS_MAIN(TestJinja)
#include "test_jinja.moc"
