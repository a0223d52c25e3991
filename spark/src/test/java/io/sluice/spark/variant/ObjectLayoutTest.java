package io.sluice.spark.variant;

import static io.sluice.spark.variant.Variants.json;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.apache.spark.types.variant.Variant;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ObjectLayoutTest {

  /** Objects with 1-byte, 2-byte and 4-byte sizes, ids and offsets. */
  private static String object(int fields, int valueLength) {
    StringBuilder text = new StringBuilder("{");
    for (int i = 0; i < fields; i++) {
      text.append(i == 0 ? "" : ",").append("\"key").append(i).append("\":\"");
      text.append("v".repeat(valueLength)).append('"');
    }
    return text.append('}').toString();
  }

  @ParameterizedTest
  @ValueSource(ints = {0, 1, 3, 40, 300, 70000})
  void agreesWithSparksReaderOnEveryField(int fields) {
    Variant doc = json(object(fields, fields > 1000 ? 1 : 70));
    ObjectLayout layout = new ObjectLayout(doc.getValue(), doc.getMetadata(), 0);
    assertEquals(doc.objectSize(), layout.size);
    for (int i = 0; i < layout.size; i += Math.max(1, layout.size / 50)) {
      Variant.ObjectField field = doc.getFieldAtIndex(i);
      int id = layout.id(i);
      assertEquals(doc.getDictionaryIdAtIndex(i), id);
      byte[] key =
          Arrays.copyOfRange(doc.getMetadata(), layout.keyStart(id), layout.keyStart(id + 1));
      assertEquals(field.key, new String(key, StandardCharsets.UTF_8));
      byte[] value = field.value.getValue();
      assertArrayEquals(
          value,
          Arrays.copyOfRange(doc.getValue(), layout.valueAt(i), layout.valueAt(i) + value.length));
      assertEquals(
          layout.valueAt(i),
          ObjectLayout.fieldPosition(
              doc.getValue(), doc.getMetadata(), UTF8String.fromString(field.key)));
    }
  }

  @Test
  void aNestedObjectIsReadWhereItStarts() {
    Variant doc = json("[1, {\"b\": 2, \"a\": \"x\"}]");
    int at = doc.getValue().length - doc.getElementAtIndex(1).getValue().length;
    ObjectLayout layout = new ObjectLayout(doc.getValue(), doc.getMetadata(), at);
    assertEquals(2, layout.size);
    int a = layout.keyStart(layout.id(0)); // fields are sorted by key
    assertEquals('a', doc.getMetadata()[a]);
  }

  @Test
  void fieldPositionIsMinusOneForMissingKeysAndNonObjects() {
    Variant doc = json("{\"a\":1}");
    assertEquals(-1, ObjectLayout.fieldPosition(doc.getValue(), doc.getMetadata(), s("b")));
    assertEquals(-1, ObjectLayout.fieldPosition(doc.getValue(), doc.getMetadata(), s("")));
    Variant array = json("[{\"a\":1}]");
    assertEquals(-1, ObjectLayout.fieldPosition(array.getValue(), array.getMetadata(), s("a")));
    Variant large = json(object(40, 1));
    assertEquals(-1, ObjectLayout.fieldPosition(large.getValue(), large.getMetadata(), s("key")));
  }

  private static UTF8String s(String text) {
    return UTF8String.fromString(text);
  }
}
