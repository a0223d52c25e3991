package io.sluice.spark.patterns;

import static io.sluice.spark.variant.Variants.val;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The pattern matcher on one field's value, in the steps format {@code pipelines.patterns} writes.
 */
class EventPatternsTest {

  /** Whether one leaf step with {@code matchers} holds on the field value {@code json}. */
  private static boolean leaf(String matchers, String json) {
    return steps("[{\"path\":[],\"matchers\":" + matchers + "}]", json);
  }

  private static boolean steps(String steps, String json) {
    return EventPatterns.matches(json == null ? null : val(json), UTF8String.fromString(steps));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "[{\"string\":\"a\"}] | \"a\" | true",
        "[{\"string\":\"a\"}] | \"A\" | false",
        "[{\"string\":\"a\"}] | \"a \" | false",
        "[{\"string\":\"1\"}] | 1 | false", // JSON types are never converted
        "[{\"number\":1}] | \"1\" | false",
        "[{\"number\":1}] | 1.0 | true",
        "[{\"number\":1}] | 1e0 | true",
        "[{\"number\":0.1}] | 0.1 | true",
        "[{\"number\":1}] | true | false",
        "[{\"literal\":true}] | true | true",
        "[{\"literal\":true}] | \"true\" | false",
        "[{\"literal\":false}] | false | true",
        "[{\"literal\":null}] | null | true",
        "[{\"literal\":null}] | \"null\" | false",
        "[{\"exists\":true}] | null | true", // a JSON null is present
        "[{\"prefix\":\"ab\"}] | \"abc\" | true",
        "[{\"prefix\":\"ab\"}] | \"a\" | false",
        "[{\"prefix\":\"\"}] | \"\" | true",
        "[{\"suffix\":\"bc\"}] | \"abc\" | true",
        "[{\"suffix\":\"bc\"}] | \"bca\" | false",
        "[{\"prefix-ignore-case\":\"AB\"}] | \"abC\" | true",
        "[{\"suffix-ignore-case\":\"bC\"}] | \"ABC\" | true",
        "[{\"suffix-ignore-case\":\"bC\"}] | \"ABD\" | false",
        "[{\"equals-ignore-case\":\"Hello\"}] | \"hELLO\" | true",
        "[{\"equals-ignore-case\":\"Hello\"}] | \"hELLO!\" | false",
        "[{\"anything-but\":[{\"string\":\"a\"}]}] | \"b\" | true",
        "[{\"anything-but\":[{\"string\":\"a\"}]}] | \"a\" | false",
        "[{\"anything-but\":[{\"string\":\"a\"}]}] | 1 | true",
        "[{\"anything-but\":[{\"prefix\":\"a\"},{\"number\":1}]}] | 1 | false",
        "[{\"string\":\"x\"},{\"number\":2}] | 2 | true", // any of the matchers
      })
  void leafMatchers(String matchers, String json, boolean expected) {
    assertEquals(expected, leaf(matchers, json), matchers + " on " + json);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "[0, false, null, false] | 0 | false",
        "[0, true, null, false] | 0 | true",
        "[0, true, null, false] | -0.0 | true",
        "[0, false, 10, true] | 10 | true",
        "[0, false, 10, false] | 10 | false",
        "[0, false, 10, false] | 9.999999 | true",
        "[null, false, 10, false] | -1e308 | true",
        "[null, false, null, false] | 1 | true",
        "[null, false, null, false] | \"1\" | false",
        "[0, false, 1, false] | 0.5 | true",
        "[0, false, 1, false] | 12345678901234567890.5 | false",
        "[1e300, false, null, false] | 1e301 | true",
      })
  void numericRanges(String bounds, String json, boolean expected) {
    assertEquals(expected, leaf("[{\"numeric\":" + bounds + "}]", json), bounds + " on " + json);
  }

  @Test
  void manyExactStringsAreLookedUpInAHashTable() {
    StringBuilder matchers = new StringBuilder("[");
    for (int i = 0; i < 50; i++) {
      matchers.append(i == 0 ? "" : ",").append("{\"string\":\"s").append(i).append("\"}");
    }
    String list = matchers.append(",{\"string\":\"\"},{\"string\":\"é😀\"}]").toString();
    for (int i = 0; i < 50; i++) {
      assertTrue(leaf(list, "\"s" + i + "\""), "s" + i);
    }
    assertTrue(leaf(list, "\"\""));
    assertTrue(leaf(list, "\"é😀\""));
    assertFalse(leaf(list, "\"s50\""));
    assertFalse(leaf(list, "\"s\""));
    assertFalse(leaf(list, "50"));
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "[\"a\", \"c\"] | \"abc\" | true", // a*c
        "[\"a\", \"c\"] | \"ac\" | true",
        "[\"a\", \"c\"] | \"a\" | false",
        "[\"ab\", \"ba\"] | \"aba\" | false", // ab*ba: no overlap
        "[\"ab\", \"ba\"] | \"abba\" | true",
        "[\"\", \"\"] | \"\" | true", // *
        "[\"\", \"x\", \"\"] | \"axb\" | true", // *x*
        "[\"\", \"x\", \"\"] | \"ab\" | false",
        "[\"a\", \"b\", \"b\", \"c\"] | \"abbc\" | true", // a*b*b*c
        "[\"a\", \"b\", \"b\", \"c\"] | \"abc\" | false",
        "[\"exact\"] | \"exact\" | true",
        "[\"exact\"] | \"exactly\" | false",
        "[\"é\", \"😀\"] | \"éx😀\" | true",
        "[\"a\", \"c\"] | 1 | false",
      })
  void wildcards(String segments, String json, boolean expected) {
    assertEquals(expected, leaf("[{\"wildcard\":" + segments + "}]", json), segments + json);
  }

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        "4:0A000000 | 4:0AFFFFFF | \"10.1.2.3\" | true",
        "4:0A000000 | 4:0AFFFFFF | \"10.255.255.255\" | true",
        "4:0A000000 | 4:0AFFFFFF | \"11.0.0.0\" | false",
        "4:0A000000 | 4:0AFFFFFF | \"010.1.2.3\" | false", // no leading zeros
        "4:0A000000 | 4:0AFFFFFF | \"10.1.2\" | false",
        "4:0A000000 | 4:0AFFFFFF | \"10.1.2.3.4\" | false",
        "4:0A000000 | 4:0AFFFFFF | \"10.1.2.256\" | false",
        "4:00000000 | 4:FFFFFFFF | \"255.255.255.255\" | true",
        "4:00000000 | 4:FFFFFFFF | \"::1\" | false", // another version
        "6:00000000000000000000000000000000 | 6:00000000000000000000000000000001 | \"::1\" | true",
        "6:00000000000000000000000000000000 | 6:00000000000000000000000000000001 | \"::\" | true",
        "6:20010DB8000000000000000000000000 | 6:20010DB8FFFFFFFFFFFFFFFFFFFFFFFF | \"2001:db8::ff00:42:8329\" | true",
        "6:20010DB8000000000000000000000000 | 6:20010DB8FFFFFFFFFFFFFFFFFFFFFFFF | \"2001:DB8:0:0:0:0:0:1\" | true",
        "6:20010DB8000000000000000000000000 | 6:20010DB8FFFFFFFFFFFFFFFFFFFFFFFF | \"2001:db9::\" | false",
        "6:00000000000000000000000000000000 | 6:FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF | \"1::2::3\" | false",
        "6:00000000000000000000000000000000 | 6:FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF | \":::\" | false",
        "6:00000000000000000000000000000000 | 6:FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF | \"1:2:3:4:5:6:7\" | false",
        "6:00000000000000000000000000000000 | 6:FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF | \"1:2:3:4:5:6:7:8:9\" | false",
        "6:00000000000000000000000000000000 | 6:FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF | \"1:2:3:4::5:6:7:8\" | false",
        "6:00000000000000000000000000000000 | 6:FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF | \"12345::\" | false",
        "6:00000000000000000000000000000000 | 6:FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF | \"1:2:3:4:5:6:7::\" | true",
        "6:00000000000000000000000000000000 | 6:FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF | \"g::\" | false",
      })
  void ipRanges(String low, String high, String json, boolean expected) {
    String matcher = "[{\"ip\":[\"" + low + "\",\"" + high + "\"]}]";
    assertEquals(expected, leaf(matcher, json), json);
  }

  @Test
  void ipv6GroupsLandWhereTheGapPutsThem() {
    byte[] text = "1:2::7:8".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    int gap = IpAddresses.ipv6Gap(text, 0, text.length);
    assertEquals(3, gap);
    assertEquals(0x0001_0002_0000_0000L, IpAddresses.ipv6Bits(text, 0, text.length, gap, 0));
    assertEquals(0x0000_0000_0007_0008L, IpAddresses.ipv6Bits(text, 0, text.length, gap, 1));
  }

  @Test
  void arraysMatchWhenAnyElementDoes() {
    assertTrue(leaf("[{\"string\":\"b\"}]", "[\"a\",\"b\"]"));
    assertFalse(leaf("[{\"string\":\"c\"}]", "[\"a\",\"b\"]"));
    assertFalse(leaf("[{\"string\":\"c\"}]", "[]"));
    assertTrue(leaf("[{\"number\":3}]", "[1,[2,[3]]]")); // nested arrays, three levels
    assertFalse(leaf("[{\"number\":4}]", "[1,[2,[3,[4]]]]")); // a fourth level is not searched
  }

  @Test
  void stepsBelowArraysHoldInsideOneElement() {
    String steps =
        "[{\"path\":[\"a\"],\"matchers\":[{\"number\":1}]},"
            + "{\"path\":[\"b\"],\"matchers\":[{\"number\":2}]}]";
    assertTrue(steps(steps, "[{\"a\":1,\"b\":2}]"));
    assertFalse(steps(steps, "[{\"a\":1,\"b\":3},{\"a\":0,\"b\":2}]")); // array-consistent
    assertTrue(steps(steps, "[{\"a\":0},{\"a\":1,\"b\":2}]"));
  }

  @Test
  void nestedPaths() {
    String steps = "[{\"path\":[\"detail\",\"state\"],\"matchers\":[{\"string\":\"on\"}]}]";
    assertTrue(steps(steps, "{\"detail\":{\"state\":\"on\"}}"));
    assertFalse(steps(steps, "{\"detail\":{\"state\":{\"x\":\"on\"}}}")); // not a leaf
    assertFalse(steps(steps, "{\"detail\":\"on\"}"));
    assertFalse(steps(steps, null));
  }

  @Test
  void absence() {
    String absent = "[{\"path\":[\"coupon\"],\"absent\":true}]";
    assertTrue(steps(absent, "{\"amount\":1}"));
    assertFalse(steps(absent, "{\"coupon\":null}")); // present, with a null value
    assertTrue(steps(absent, "{\"coupon\":{}}")); // an object is not a leaf
    assertFalse(steps(absent, "[{},{\"coupon\":\"x\"}]")); // absent from every element
    assertTrue(steps(absent, null)); // a missing field holds nothing
    assertTrue(steps("[{\"path\":[],\"absent\":true}]", null));
    assertFalse(steps("[{\"path\":[],\"absent\":true}]", "1"));
    assertFalse(steps("[{\"path\":[],\"matchers\":[{\"exists\":true}]}]", null));
  }

  @Test
  void theSameLiteralIsCompiledOnce() {
    UTF8String steps = UTF8String.fromString("[{\"path\":[],\"matchers\":[{\"string\":\"a\"}]}]");
    Node first = EventPatterns.compiled(steps);
    assertSame(first, EventPatterns.compiled(steps)); // found by identity
    UTF8String copy = UTF8String.fromString(steps.toString());
    assertNotSame(steps, copy);
    assertSame(first, EventPatterns.compiled(copy)); // found by content
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "not json",
        "{}",
        "[{\"matchers\":[]}]",
        "[{\"path\":[1],\"matchers\":[]}]",
        "[{\"path\":[],\"matchers\":{}}]",
        "[{\"path\":[],\"matchers\":[{\"regex\":\"a\"}]}]",
        "[{\"path\":[],\"matchers\":[{\"prefix\":\"a\",\"suffix\":\"b\"}]}]",
        "[{\"path\":[],\"matchers\":[{\"number\":\"1\"}]}]",
        "[{\"path\":[],\"matchers\":[{\"literal\":1}]}]",
        "[{\"path\":[],\"matchers\":[{\"wildcard\":[]}]}]",
        "[{\"path\":[],\"matchers\":[{\"ip\":[\"4:00000000\",\"6:00\"]}]}]",
        "[{\"path\":[],\"matchers\":[{\"numeric\":[\"0\",true,null,false]}]}]",
      })
  void malformedStepsAreRefused(String steps) {
    assertThrows(IllegalArgumentException.class, () -> StepCompiler.compile(steps));
  }

  @Test
  void nullStepsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> EventPatterns.matches(val("1"), null));
  }
}
