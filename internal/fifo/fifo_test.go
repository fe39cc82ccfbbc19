package fifo

import (
	"testing"

	"pgregory.net/rapid"
)

// TestFIFOMatchesSlice drives a FIFO and a plain slice with the same random
// operations and requires identical contents after every step.
func TestFIFOMatchesSlice(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var q FIFO[int]
		var model []int
		next := 0
		for range rapid.IntRange(0, 200).Draw(t, "ops") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0, 1:
				q.Push(next)
				model = append(model, next)
				next++
			case 2:
				v, ok := q.Pop()
				if ok != (len(model) > 0) {
					t.Fatalf("Pop ok=%v with model len %d", ok, len(model))
				}
				if ok {
					if v != model[0] {
						t.Fatalf("Pop = %d, want %d", v, model[0])
					}
					model = model[1:]
				}
			case 3:
				m := rapid.IntRange(2, 5).Draw(t, "mod")
				removed := q.RemoveIf(func(v int) bool { return v%m == 0 })
				var kept []int
				for _, v := range model {
					if v%m != 0 {
						kept = append(kept, v)
					}
				}
				if removed != len(model)-len(kept) {
					t.Fatalf("RemoveIf removed %d, want %d", removed, len(model)-len(kept))
				}
				model = kept
			}
			if q.Len() != len(model) {
				t.Fatalf("Len = %d, want %d", q.Len(), len(model))
			}
			for i, want := range model {
				if got := q.At(i); got != want {
					t.Fatalf("At(%d) = %d, want %d", i, got, want)
				}
			}
		}
	})
}

func TestPopEmpty(t *testing.T) {
	var q FIFO[string]
	if _, ok := q.Pop(); ok {
		t.Fatal("Pop on empty FIFO reported ok")
	}
}

func BenchmarkPushPop(b *testing.B) {
	var q FIFO[int]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q.Push(i)
		q.Pop()
	}
}
