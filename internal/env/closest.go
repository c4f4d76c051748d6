package env

import "unicode/utf8"

// Closest returns the word of known that word is most likely a misspelling
// of, for a "did you mean" hint, or "" when none is close. Close is within
// two edits, or one for a word of under four letters, where an edit
// inserts, deletes or replaces a letter or swaps two adjacent ones. Of
// equally close words, the first in known wins.
//
// Every "did you mean" in Chalk's config errors goes through it, so that
// the same typo gets the same answer in chalk.toml and in [plugins].
func Closest(word string, known []string) string {
	limit := 2
	if utf8.RuneCountInString(word) < 4 {
		limit = 1
	}
	best, bestDist := "", limit+1
	for _, k := range known {
		if d := editDistance(word, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance counts the insertions, deletions, substitutions and swaps
// of adjacent letters that turn a into b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
