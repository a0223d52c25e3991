package io.sluice.spark.patterns;

import static io.sluice.spark.variant.Variants.val;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A bus's routing on one field: the index on exact values never changes which rules hold, only how
 * many are decided in full. Each case compares {@code route} with every entry decided by {@code
 * matches} (the same steps, without the index).
 */
class RoutesTest {

  /** Entries of rules 0..n-1: {steps, key or null}; rule i has targets {2i, 2i+1}. */
  private static String plan(List<String[]> entries, int[] rules) {
    StringBuilder out = new StringBuilder();
    int count = 0;
    for (int r : rules) {
      count = Math.max(count, r + 1);
    }
    out.append("{\"rules\":").append(count).append(",\"entries\":[");
    for (int e = 0; e < entries.size(); e++) {
      int rule = rules[e];
      out.append(e == 0 ? "" : ",")
          .append("{\"rule\":")
          .append(rule)
          .append(",\"targets\":[")
          .append(2 * rule)
          .append(',')
          .append(2 * rule + 1)
          .append("],\"steps\":")
          .append(entries.get(e)[0]);
      if (entries.get(e)[1] != null) {
        out.append(",\"key\":").append(entries.get(e)[1]);
      }
      out.append('}');
    }
    return out.append("]}").toString();
  }

  /** What route must give: each rule's targets once, in entry order, when an entry holds. */
  private static int[] expected(List<String[]> entries, int[] rules, String json) {
    List<Integer> out = new ArrayList<>();
    boolean[] done = new boolean[rules.length];
    for (int e = 0; e < entries.size(); e++) {
      int rule = rules[e];
      if (done[rule]) {
        continue;
      }
      UTF8String steps = UTF8String.fromString(entries.get(e)[0]);
      if (EventPatterns.matches(json == null ? null : val(json), steps)) {
        done[rule] = true;
        out.add(2 * rule);
        out.add(2 * rule + 1);
      }
    }
    return out.stream().mapToInt(Integer::intValue).toArray();
  }

  private static int[] route(String plan, String json) {
    return Routes.route(json == null ? null : val(json), UTF8String.fromString(plan));
  }

  private static String exact(String path, String value) {
    return "[{\"path\":" + path + ",\"matchers\":[" + value + "]}]";
  }

  private static String key(String path, String value) {
    return "{\"path\":" + path + ",\"values\":[" + value + "]}";
  }

  @Test
  void keyedAndUnkeyedEntriesAgreeWithMatches() {
    List<String[]> entries = new ArrayList<>();
    int[] rules = new int[8];
    String[] values = {
      "{\"number\":3}",
      "{\"number\":-0.0}",
      "{\"string\":\"x\"}",
      "{\"literal\":true}",
      "{\"literal\":null}",
      "{\"number\":3}"
    };
    for (int i = 0; i < values.length; i++) {
      entries.add(new String[] {exact("[\"b\"]", values[i]), key("[\"b\"]", values[i])});
      rules[i] = i;
    }
    // a keyed rule with a second step, and an unkeyed one (a range, an absence)
    entries.add(
        new String[] {
          "[{\"path\":[\"b\"],\"matchers\":[{\"number\":3}]},"
              + "{\"path\":[\"c\"],\"matchers\":[{\"numeric\":[10.0,false,null,false]}]}]",
          key("[\"b\"]", "{\"number\":3}")
        });
    rules[6] = 6;
    entries.add(new String[] {"[{\"path\":[\"c\"],\"absent\":true}]", null});
    rules[7] = 7;
    String plan = plan(entries, rules);
    String[] events = {
      "{\"b\":3}",
      "{\"b\":3.0,\"c\":11}",
      "{\"b\":0}",
      "{\"b\":-0.0}",
      "{\"b\":\"x\"}",
      "{\"b\":\"3\"}",
      "{\"b\":true}",
      "{\"b\":null}",
      "{\"b\":[1,[3,[\"x\"]]],\"c\":20}",
      "{\"b\":[[[[3]]]]}",
      "{\"b\":{\"b\":3}}",
      "{}",
      "[{\"b\":3},{\"b\":\"x\",\"c\":12}]",
      "3",
      null
    };
    for (String event : events) {
      assertArrayEquals(expected(entries, rules, event), route(plan, event), event);
    }
  }

  @Test
  void aRuleWithAlternativesGoesOnce() {
    List<String[]> entries = new ArrayList<>();
    entries.add(
        new String[] {
          exact("[\"a\"]", "{\"string\":\"x\"}"), key("[\"a\"]", "{\"string\":\"x\"}")
        });
    entries.add(
        new String[] {exact("[\"b\"]", "{\"number\":1}"), key("[\"b\"]", "{\"number\":1}")});
    entries.add(new String[] {exact("[\"a\"]", "{\"exists\":true}"), null});
    int[] rules = {0, 0, 1};
    String plan = plan(entries, rules);
    for (String event : new String[] {"{\"a\":\"x\",\"b\":1}", "{\"b\":1}", "{\"a\":\"y\"}"}) {
      assertArrayEquals(expected(entries, rules, event), route(plan, event), event);
    }
    assertArrayEquals(new int[] {0, 1, 2, 3}, route(plan, "{\"a\":\"x\",\"b\":1}"));
  }

  @Test
  void manyRulesOnOneFieldAgreeWithMatchesOnRandomEvents() {
    Random random = new Random(7);
    List<String[]> entries = new ArrayList<>();
    int n = 120;
    int[] rules = new int[n];
    for (int i = 0; i < n; i++) {
      String value =
          i % 3 == 0 ? "{\"string\":\"s" + i % 40 + "\"}" : "{\"number\":" + i % 40 + "}";
      String steps =
          i % 5 == 0
              ? "[{\"path\":[\"k\"],\"matchers\":["
                  + value
                  + "]},{\"path\":[\"n\"],\"matchers\":[{\"numeric\":[5.0,true,null,false]}]}]"
              : exact("[\"k\"]", value);
      entries.add(new String[] {steps, i % 7 == 0 ? null : key("[\"k\"]", value)});
      rules[i] = i;
    }
    String plan = plan(entries, rules);
    for (int j = 0; j < 2000; j++) {
      int k = random.nextInt(45);
      String value = random.nextBoolean() ? "\"s" + k + "\"" : Integer.toString(k);
      if (random.nextInt(4) == 0) {
        value = "[" + value + "," + random.nextInt(45) + "]";
      }
      String event = "{\"k\":" + value + ",\"n\":" + random.nextInt(10) + "}";
      assertArrayEquals(expected(entries, rules, event), route(plan, event), event);
    }
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "not json",
        "[]",
        "{\"rules\":1,\"entries\":[{\"rule\":1,\"targets\":[0],\"steps\":[]}]}",
        "{\"rules\":1,\"entries\":[{\"rule\":0,\"steps\":[]}]}",
        "{\"rules\":1,\"entries\":[{\"rule\":0,\"targets\":[0],\"steps\":[],\"key\":{\"path\":[],\"values\":[]}}]}",
        "{\"rules\":1,\"entries\":[{\"rule\":0,\"targets\":[0],\"steps\":[],\"key\":{\"path\":[],\"values\":[{\"prefix\":\"a\"}]}}]}",
      })
  void malformedRoutesAreRefused(String routes) {
    assertThrows(IllegalArgumentException.class, () -> Routes.compile(routes));
  }
}
