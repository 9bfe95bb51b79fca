package dev.licensor.sdk;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader and writer (RFC 8259), since Java 17 has none. Objects are read as
 * unmodifiable insertion-ordered maps, arrays as unmodifiable lists, numbers as {@link Long}
 * when they are integer literals within ±(2^53 − 1) (no fraction, no exponent: {@code 1.0} and
 * {@code 1e3} are floats to most readers, so every SDK refuses them alike) and as {@link Double} otherwise.
 * Duplicate keys, trailing data, a byte-order mark and anything else outside the grammar are refused.
 */
public final class Json {
    /** The largest integer every JSON reader of the SDK family holds exactly. */
    static final long MAX_SAFE_INTEGER = (1L << 53) - 1;
    private static final int MAX_DEPTH = 64;

    private final String text;
    private int at;

    private Json(String text) {
        this.text = text;
    }

    /** Raised for text that is not exactly one JSON value. */
    public static final class JsonException extends Exception {
        private static final long serialVersionUID = 1L;

        JsonException(String message) {
            super(message);
        }
    }

    /** Reads one JSON value filling the whole text (whitespace around it allowed). */
    public static Object parse(String text) throws JsonException {
        Json reader = new Json(text);
        reader.skipSpace();
        Object value = reader.value(0);
        reader.skipSpace();
        if (reader.at != text.length()) throw reader.error("unexpected data after the value");
        return value;
    }

    /** Reads a JSON object, refusing any other value. */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> parseObject(String text) throws JsonException {
        Object value = parse(text);
        if (!(value instanceof Map)) throw new JsonException("not a JSON object");
        return (Map<String, Object>) value;
    }

    private JsonException error(String message) {
        return new JsonException(message + " at offset " + at);
    }

    private void skipSpace() {
        while (at < text.length()) {
            char c = text.charAt(at);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
            at++;
        }
    }

    private Object value(int depth) throws JsonException {
        if (depth > MAX_DEPTH) throw error("nested too deeply");
        if (at >= text.length()) throw error("unexpected end");
        char c = text.charAt(at);
        switch (c) {
            case '{':
                return object(depth);
            case '[':
                return array(depth);
            case '"':
                return string();
            case 't':
                return word("true", Boolean.TRUE);
            case 'f':
                return word("false", Boolean.FALSE);
            case 'n':
                return word("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) return number();
                throw error("unexpected character");
        }
    }

    private Object word(String word, Object value) throws JsonException {
        if (!text.startsWith(word, at)) throw error("unexpected word");
        at += word.length();
        return value;
    }

    private Map<String, Object> object(int depth) throws JsonException {
        at++;
        Map<String, Object> map = new LinkedHashMap<>();
        skipSpace();
        if (at < text.length() && text.charAt(at) == '}') {
            at++;
            return Collections.unmodifiableMap(map);
        }
        while (true) {
            skipSpace();
            if (at >= text.length() || text.charAt(at) != '"') throw error("expected a key");
            int keyAt = at;
            String key = string();
            skipSpace();
            expect(':');
            skipSpace();
            Object value = value(depth + 1);
            if (map.containsKey(key)) {
                at = keyAt;
                throw error("duplicate key \"" + key + "\"");
            }
            map.put(key, value);
            skipSpace();
            if (at < text.length() && text.charAt(at) == ',') {
                at++;
                continue;
            }
            expect('}');
            return Collections.unmodifiableMap(map);
        }
    }

    private List<Object> array(int depth) throws JsonException {
        at++;
        List<Object> list = new ArrayList<>();
        skipSpace();
        if (at < text.length() && text.charAt(at) == ']') {
            at++;
            return Collections.unmodifiableList(list);
        }
        while (true) {
            skipSpace();
            list.add(value(depth + 1));
            skipSpace();
            if (at < text.length() && text.charAt(at) == ',') {
                at++;
                continue;
            }
            expect(']');
            return Collections.unmodifiableList(list);
        }
    }

    private void expect(char c) throws JsonException {
        if (at >= text.length() || text.charAt(at) != c) throw error("expected '" + c + "'");
        at++;
    }

    private String string() throws JsonException {
        at++;
        StringBuilder out = new StringBuilder();
        while (true) {
            if (at >= text.length()) throw error("unterminated string");
            char c = text.charAt(at++);
            if (c == '"') return out.toString();
            if (c < 0x20) throw error("control character in a string");
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (at >= text.length()) throw error("unterminated escape");
            char e = text.charAt(at++);
            switch (e) {
                case '"': out.append('"'); break;
                case '\\': out.append('\\'); break;
                case '/': out.append('/'); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 't': out.append('\t'); break;
                case 'u': {
                    if (at + 4 > text.length()) throw error("short \\u escape");
                    int code = 0;
                    for (int i = 0; i < 4; i++) {
                        int digit = Character.digit(text.charAt(at++), 16);
                        if (digit < 0) throw error("bad \\u escape");
                        code = code * 16 + digit;
                    }
                    out.append((char) code);
                    break;
                }
                default:
                    throw error("bad escape");
            }
        }
    }

    private Object number() throws JsonException {
        int start = at;
        if (text.charAt(at) == '-') at++;
        if (at < text.length() && text.charAt(at) == '0') at++;
        else if (!digits()) throw error("bad number");
        if (at < text.length() && text.charAt(at) == '.') {
            at++;
            if (!digits()) throw error("bad fraction");
        }
        if (at < text.length() && (text.charAt(at) == 'e' || text.charAt(at) == 'E')) {
            at++;
            if (at < text.length() && (text.charAt(at) == '+' || text.charAt(at) == '-')) at++;
            if (!digits()) throw error("bad exponent");
        }
        String literal = text.substring(start, at);
        // Only an integer literal is an integer: 1.0 and 1e3 are floats to most JSON readers, so every SDK refuses them alike.
        if (literal.indexOf('.') < 0 && literal.indexOf('e') < 0 && literal.indexOf('E') < 0 && literal.length() <= 17) {
            long value = Long.parseLong(literal);
            if (Math.abs(value) <= MAX_SAFE_INTEGER) return value;
        }
        return Double.parseDouble(literal);
    }

    private boolean digits() {
        int start = at;
        while (at < text.length() && text.charAt(at) >= '0' && text.charAt(at) <= '9') at++;
        return at > start;
    }

    /** Writes a value made of maps, lists, strings, numbers, booleans and null as compact JSON. */
    public static String write(Object value) {
        StringBuilder out = new StringBuilder();
        write(value, out);
        return out.toString();
    }

    private static void write(Object value, StringBuilder out) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String) {
            quote((String) value, out);
        } else if (value instanceof Boolean || value instanceof Long || value instanceof Integer) {
            out.append(value);
        } else if (value instanceof Number) {
            double d = ((Number) value).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) out.append("null");
            else if (d == Math.rint(d) && Math.abs(d) <= MAX_SAFE_INTEGER) out.append((long) d);
            else out.append(BigDecimal.valueOf(d).stripTrailingZeros().toString().replace("E+", "e+").replace("E-", "e-"));
        } else if (value instanceof Map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                if (!first) out.append(',');
                first = false;
                quote(String.valueOf(entry.getKey()), out);
                out.append(':');
                write(entry.getValue(), out);
            }
            out.append('}');
        } else if (value instanceof Iterable) {
            out.append('[');
            boolean first = true;
            for (Object item : (Iterable<?>) value) {
                if (!first) out.append(',');
                first = false;
                write(item, out);
            }
            out.append(']');
        } else {
            throw new IllegalArgumentException("cannot write " + value.getClass().getName() + " as JSON");
        }
    }

    private static void quote(String text, StringBuilder out) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                case '\b': out.append("\\b"); break;
                case '\f': out.append("\\f"); break;
                default:
                    if (c < 0x20 || Character.isSurrogate(c) && !pairedSurrogate(text, i)) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
            }
        }
        out.append('"');
    }

    /** A surrogate that is half of a valid pair is written as is; a lone one is escaped, as JSON.stringify does. */
    private static boolean pairedSurrogate(String text, int i) {
        char c = text.charAt(i);
        if (Character.isHighSurrogate(c)) return i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1));
        return i > 0 && Character.isHighSurrogate(text.charAt(i - 1));
    }
}
