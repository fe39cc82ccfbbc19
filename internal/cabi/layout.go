package cabi

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
)

// Mirror names a Go type that mirrors the C struct CType ("struct
// ibv_qp_attr"): each field's c tag names the member, nested structs
// giving dotted paths.
type Mirror struct {
	CType string
	Go    any // a value of the Go type
}

// member is one field of a mirror: its C path, Go offset and size.
type member struct {
	path      string
	off, size uintptr
}

func members(t reflect.Type, prefix string, base uintptr, out []member) []member {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("c")
		if tag == "" {
			continue
		}
		path := prefix + tag
		out = append(out, member{path, base + f.Offset, f.Type.Size()})
		if f.Type.Kind() == reflect.Struct {
			out = members(f.Type, path+".", base+f.Offset, out)
		}
	}
	return out
}

// CheckLayouts compiles a C program with the C compiler cc that includes
// the given headers (verbs.h first, then each; a header with a / is
// included by path) and reports every difference between the C structs'
// sizes and member offsets and sizes and those of their Go mirrors; nil
// when there is none. An error also says when the program does not build.
func CheckLayouts(cc string, headers []string, mirrors []Mirror) error {
	dir, err := os.MkdirTemp("", "cabi-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include <infiniband/verbs.h>\n")
	for _, h := range headers {
		fmt.Fprintf(&src, "#include %q\n", h)
	}
	src.WriteString("int main(void) {\n")
	want := map[string]string{}
	for _, m := range mirrors {
		t := reflect.TypeOf(m.Go)
		fmt.Fprintf(&src, "\tprintf(\"%s size %%zu\\n\", sizeof(%s));\n", m.CType, m.CType)
		want[m.CType+" size"] = fmt.Sprint(t.Size())
		for _, f := range members(t, "", 0, nil) {
			key := m.CType + " ." + f.path
			fmt.Fprintf(&src, "\tprintf(\"%s %%zu %%zu\\n\", offsetof(%s, %s), sizeof(((%s *)0)->%s));\n",
				key, m.CType, f.path, m.CType, f.path)
			want[key] = fmt.Sprintf("%d %d", f.off, f.size)
		}
	}
	src.WriteString("\treturn 0;\n}\n")
	c := filepath.Join(dir, "layout.c")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		return err
	}
	bin := filepath.Join(dir, "layout")
	if out, err := exec.Command(cc, "-o", bin, c).CombinedOutput(); err != nil {
		return fmt.Errorf("compiling the layout program: %v\n%s", err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		return err
	}
	var bad []string
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		i := strings.LastIndex(line, " size ")
		key, got := "", ""
		if i >= 0 && !strings.Contains(line, " .") {
			key, got = line[:i]+" size", line[i+len(" size "):]
		} else {
			f := strings.Fields(line)
			if len(f) < 3 {
				continue
			}
			key, got = strings.Join(f[:len(f)-2], " "), strings.Join(f[len(f)-2:], " ")
		}
		seen++
		if w, ok := want[key]; !ok || w != got {
			bad = append(bad, fmt.Sprintf("%s: C has %s, Go %s", key, got, w))
		}
	}
	if seen != len(want) {
		bad = append(bad, fmt.Sprintf("the program printed %d lines for %d members", seen, len(want)))
	}
	if len(bad) > 0 {
		return fmt.Errorf("the C and Go layouts differ (offset size):\n%s", strings.Join(bad, "\n"))
	}
	return nil
}

// Mirrors are the verbs.h structs this package mirrors.
var Mirrors = []Mirror{
	{"struct ibv_global_route", GlobalRoute{}},
	{"struct ibv_ah_attr", AHAttr{}},
	{"struct ibv_qp_cap", QPCap{}},
	{"struct ibv_qp_attr", QPAttr{}},
	{"struct ibv_port_attr", PortAttr{}},
	{"struct ibv_device_attr", DeviceAttr{}},
	{"struct ibv_odp_caps", ODPCaps{}},
	{"struct ibv_rss_caps", RSSCaps{}},
	{"struct ibv_device_attr_ex", DeviceAttrEx{}},
	{"struct ibv_srq_attr", SRQAttr{}},
	{"struct ibv_wc", WC{}},
	{"struct ibv_sge", SGE{}},
	{"struct ibv_qp_init_attr", QPInitAttr{}},
}
