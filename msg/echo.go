package msg

import (
	"strconv"
	"unicode/utf8"
)

// EchoBytesMax bounds the client text (a name, a key, a value) that an
// error message quotes. Quoted whole, a field name that filled a 16 MiB
// batch line made a 49 MB answer (each byte escaped), and a 100,000-byte
// username a 100,111-byte 400, built and held outside every budget.
const EchoBytesMax = 128

// QuoteClipped quotes text for an error message, as %q does, keeping at
// most EchoBytesMax bytes of it; a longer text is quoted cut, followed by
// its length.
func QuoteClipped[T string | []byte](text T) string {
	if len(text) <= EchoBytesMax {
		return strconv.Quote(string(text))
	}
	return strconv.Quote(string(CutAtRune(text, EchoBytesMax))) + "... (" + strconv.Itoa(len(text)) + " bytes)"
}

// CutAtRune returns, of a text longer than bytesMax, the longest prefix
// that holds at most bytesMax bytes and ends before a character's start.
func CutAtRune[T string | []byte](text T, bytesMax int) T {
	cut := bytesMax
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut]
}
