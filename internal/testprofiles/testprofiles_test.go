package testprofiles

import (
	"strings"
	"testing"
)

func names(t *testing.T, env string, race bool, day int) string {
	t.Helper()
	ps, err := choose(env, race, day)
	if err != nil {
		return "error: " + err.Error()
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return strings.Join(out, " ")
}

// TestChoose: every profile without the race detector; under it default,
// rxe and the provider profiles in turn, day by day; the variable
// overrides either way.
func TestChoose(t *testing.T) {
	for _, tt := range []struct {
		env  string
		race bool
		day  int
		want string
	}{
		{"", false, 1, "default rxe mlx5 siw irdma"},
		{"", true, 3, "default rxe mlx5"},
		{"", true, 4, "default rxe siw"},
		{"", true, 5, "default rxe irdma"},
		{"all", true, 5, "default rxe mlx5 siw irdma"},
		{"siw, mlx5", false, 1, "siw mlx5"},
		{"nope", true, 1, `error: sim: "nope" is not a profile; the profiles are default, rxe, mlx5, siw, irdma`},
	} {
		if got := names(t, tt.env, tt.race, tt.day); got != tt.want {
			t.Errorf("choose(%q, race %v, day %d) = %s, want %s", tt.env, tt.race, tt.day, got, tt.want)
		}
	}
}
