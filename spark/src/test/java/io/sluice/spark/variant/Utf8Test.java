package io.sluice.spark.variant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.Random;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class Utf8Test {

  private static boolean valid(String hex) {
    byte[] bytes = HexFormat.of().parseHex(hex);
    return Utf8.isValid(bytes, bytes.length);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "41",
        "41424344454647", // 7 ASCII bytes: shorter than one 8-byte step
        "4142434445464748", // exactly one step
        "41424344454647484950", // a step and a tail
        "c2a9", // ©, the smallest two-byte lead
        "dfbf", // U+07FF
        "e0a080", // U+0800, the smallest three-byte form
        "ed9fbf", // U+D7FF, just below the surrogates
        "ee8080", // U+E000, just above them
        "efbfbf", // U+FFFF
        "f0908080", // U+10000, the smallest four-byte form
        "f09f9880", // 😀
        "f48fbfbf", // U+10FFFF, the largest code point
        "414243444546474849f09f98804142434445464748" // non-ASCII between ASCII steps
      })
  void wellFormed(String hex) {
    assertTrue(valid(hex), hex);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "c080", // overlong NUL
        "c1bf", // overlong two-byte
        "e08080", // overlong three-byte
        "e09fbf", // overlong U+07FF
        "f0808080", // overlong four-byte
        "f08fbfbf", // overlong U+FFFF
        "eda080", // surrogate U+D800
        "edbfbf", // surrogate U+DFFF
        "f4908080", // U+110000
        "f5808080", // lead past F4
        "ff",
        "80", // a stray continuation byte
        "4142434445464748bf", // one after an ASCII step
        "c3", // cut short
        "e282",
        "f09f98",
        "41424344454647e282", // cut short after ASCII
        "e24141", // a continuation that is not one
        "e28241",
        "f09f4180",
        "f09f9841"
      })
  void malformed(String hex) {
    assertFalse(valid(hex), hex);
  }

  @Test
  void checksOnlyTheFirstNBytes() {
    byte[] bytes = {'a', 'b', (byte) 0xFF};
    assertTrue(Utf8.isValid(bytes, 2));
    assertFalse(Utf8.isValid(bytes, 3));
    byte[] cut = {(byte) 0xC3, (byte) 0xA9};
    assertFalse(Utf8.isValid(cut, 1));
  }

  @Test
  void agreesWithJavasStrictDecoder() {
    Random random = new Random(3629);
    String[] pieces = {"a", "é", "😀", "\uFFFF", "\u0800", "\uE000"};
    for (int i = 0; i < 50000; i++) {
      StringBuilder text = new StringBuilder();
      for (int n = random.nextInt(12); n > 0; n--) {
        text.append(pieces[random.nextInt(pieces.length)]);
      }
      byte[] bytes = text.toString().getBytes(StandardCharsets.UTF_8);
      for (int flips = random.nextInt(3); flips > 0 && bytes.length > 0; flips--) {
        bytes[random.nextInt(bytes.length)] = (byte) random.nextInt(256);
      }
      assertEquals(
          strictlyDecodes(bytes),
          Utf8.isValid(bytes, bytes.length),
          () -> HexFormat.of().formatHex(bytes));
    }
  }

  private static boolean strictlyDecodes(byte[] bytes) {
    try {
      StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes));
      return true;
    } catch (CharacterCodingException e) {
      return false;
    }
  }

  @Test
  void parseReadsTheBytesInPlaceOnlyWhenTheyReadAsTheSameText() {
    UTF8String plain = UTF8String.fromString("{\"a\": \"é\"}");
    assertSame(plain.getBytes(), JsonInput.utf8Bytes(plain));
    assertArrayEquals(plain.getBytes(), JsonInput.utf8Bytes(plain));
    assertNull(JsonInput.utf8Bytes(UTF8String.fromBytes(new byte[] {'"', (byte) 0xC3, '"'})));
    assertNull(JsonInput.utf8Bytes(UTF8String.fromString("\uFEFF{}"))); // byte-order mark
    assertNull(JsonInput.utf8Bytes(UTF8String.fromString("1\u0000"))); // UTF-16 to Jackson
    assertSame(
        UTF8String.fromString("12345\u0000").getBytes().length,
        JsonInput.utf8Bytes(UTF8String.fromString("12345\u0000")).length); // NUL after 4 bytes
  }
}
