// Package words writes numbers and counts for people: thousands
// separators, and a noun in the singular for one and the plural
// otherwise. The checker's reasons, the reports and the CLI's messages
// share it, so that none says "1 cells".
package words

import (
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var printer = message.NewPrinter(language.English)

// Commas writes n with thousands separators: 1,234,567.
func Commas(n int64) string { return printer.Sprint(n) }

// Plural picks the singular form for one and the plural (given, or the
// singular with an s) otherwise.
func Plural(n int64, forms ...string) string {
	switch {
	case n == 1:
		return forms[0]
	case len(forms) > 1:
		return forms[1]
	}
	return forms[0] + "s"
}

// Count writes n and the noun that goes with it: "1 cell", "2 cells",
// "1,000 keys"; forms as for Plural.
func Count[N ~int | ~int64](n N, forms ...string) string {
	return Commas(int64(n)) + " " + Plural(int64(n), forms...)
}
