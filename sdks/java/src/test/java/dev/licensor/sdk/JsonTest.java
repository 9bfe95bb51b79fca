package dev.licensor.sdk;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The SDK's strict JSON reader and writer. */
class JsonTest {
    @Test
    void readsEveryKindOfValueInOrder() throws Exception {
        Object value = Json.parse(" {\"b\":[1,-2,0,true,false,null],\"a\":{\"x\":\"\\u0041\\n\\\"\\\\\\/\\ud83d\\ude00é\"},\"f\":1.5}\r\n\t");
        assertEquals(List.of("b", "a", "f"), List.copyOf(((Map<?, ?>) value).keySet()));
        assertEquals(Arrays.asList(1L, -2L, 0L, true, false, null), ((Map<?, ?>) value).get("b"));
        assertEquals(Map.of("x", "A\n\"\\/😀é"), ((Map<?, ?>) value).get("a"));
        assertEquals(1.5, ((Map<?, ?>) value).get("f"));
        assertEquals("{\"b\":[1,-2,0,true,false,null],\"a\":{\"x\":\"A\\n\\\"\\\\/😀é\"},\"f\":1.5}", Json.write(value));
    }

    @Test
    void readsOnlyIntegerLiteralsWithinTheSafeRangeAsIntegers() throws Exception {
        assertEquals(9_007_199_254_740_991L, Json.parse("9007199254740991"));
        assertEquals(-9_007_199_254_740_991L, Json.parse("-9007199254740991"));
        assertEquals(Double.class, Json.parse("9007199254740992").getClass());
        assertEquals(Double.class, Json.parse("1.0").getClass());
        assertEquals(Double.class, Json.parse("1e3").getClass());
        assertEquals(0L, Json.parse("-0"));
    }

    @Test
    void refusesWhatIsNotExactlyOneJsonValue() {
        for (String text : List.of("", " ", "{", "{}}", "{} {}", "[1,]", "{\"a\":1,}", "{'a':1}", "{\"a\" 1}", "01", "+1", ".5", "1.", "1e",
            "-", "NaN", "Infinity", "tru", "nul", "\"a", "\"\\x\"", "\"\\u12\"", "\"tab\there\"", "\ufeff{}", "\u00a0{}", "{\"a\":1,\"a\":2}",
            "{\"a\":1,\"\\u0061\":2}", "[".repeat(70) + "]".repeat(70))) {
            assertThrows(Json.JsonException.class, () -> Json.parse(text), text);
        }
    }

    @Test
    void writesControlCharactersAndLoneSurrogatesEscaped() {
        assertEquals("\"\\u0001\\t\\ud800x\"", Json.write("\u0001\t\ud800x"));
    }
}
