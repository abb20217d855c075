// Package kubernetes_test checks the Kubernetes manifests beside it (see
// docs/kubernetes.md) without a cluster: each file parses, and the pieces
// agree with one another — the nodes are an Indexed Job whose pods run
// `lockbench node` against the coordinator's Service, on the port the
// coordinator listens on, as many of them as the coordinator waits for.
// It cannot tell whether a cluster accepts them: nothing here applies
// them to one.
package kubernetes_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// meta is an object's metadata.
type meta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

// object is one document of a manifest, its kind-specific part kept as a
// node to decode into the type its kind calls for.
type object struct {
	File       string
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   meta   `yaml:"metadata"`
	doc        yaml.Node
}

// envFrom is a container's source of environment variables.
type envFrom struct {
	ConfigMapRef *struct {
		Name string `yaml:"name"`
	} `yaml:"configMapRef"`
}

// envVar is a container's environment variable.
type envVar struct {
	Name      string `yaml:"name"`
	Value     string `yaml:"value"`
	ValueFrom *struct {
		SecretKeyRef *struct {
			Name     string `yaml:"name"`
			Key      string `yaml:"key"`
			Optional bool   `yaml:"optional"`
		} `yaml:"secretKeyRef"`
	} `yaml:"valueFrom"`
}

// containerPort is a port a container listens on.
type containerPort struct {
	Name          string `yaml:"name"`
	ContainerPort int    `yaml:"containerPort"`
}

// container is what the tests read of a container.
type container struct {
	Name      string          `yaml:"name"`
	Image     string          `yaml:"image"`
	Command   []string        `yaml:"command"`
	Args      []string        `yaml:"args"`
	EnvFrom   []envFrom       `yaml:"envFrom"`
	Env       []envVar        `yaml:"env"`
	Ports     []containerPort `yaml:"ports"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
}

// job is what the tests read of a Job.
type job struct {
	Spec struct {
		CompletionMode       string `yaml:"completionMode"`
		Completions          *int   `yaml:"completions"`
		Parallelism          *int   `yaml:"parallelism"`
		BackoffLimit         *int   `yaml:"backoffLimit"`
		BackoffLimitPerIndex *int   `yaml:"backoffLimitPerIndex"`
		Template             struct {
			Metadata meta `yaml:"metadata"`
			Spec     struct {
				RestartPolicy string      `yaml:"restartPolicy"`
				Containers    []container `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// service is what the tests read of a Service.
type service struct {
	Spec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"` // a name or a number
		} `yaml:"ports"`
	} `yaml:"spec"`
}

// networkPolicy is what the tests read of a NetworkPolicy.
type networkPolicy struct {
	Spec struct {
		PodSelector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"podSelector"`
		Ingress []struct {
			From []struct {
				PodSelector struct {
					MatchLabels map[string]string `yaml:"matchLabels"`
				} `yaml:"podSelector"`
			} `yaml:"from"`
			Ports []struct {
				Port int `yaml:"port"`
			} `yaml:"ports"`
		} `yaml:"ingress"`
	} `yaml:"spec"`
}

// manifests is every object of the directory, and the ones the run is
// made of.
type manifests struct {
	files     []string // the .yaml files
	objects   []object
	resources []string // kustomization.yaml's
	// secrets are kustomization.yaml's generated Secrets: their files, by
	// name.
	secrets     map[string][]string
	config      map[string]string
	service     service
	coordinator job
	nodes       job
	policy      *networkPolicy
}

// The names the manifests give the run's objects.
const (
	serviceName     = "lockbench-coordinator"
	coordinatorName = "lockbench-coordinator"
	nodesName       = "lockbench-nodes"
	configName      = "lockbench-run"
	// nodeSecretName is the run's node secret's Secret, generated from
	// nodeSecretFile (which the user makes per run).
	nodeSecretName = "lockbench-node"
	nodeSecretFile = "node.secret"
)

// load parses every manifest of the directory.
func load(t *testing.T) *manifests {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	m := &manifests{files: files}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(strings.NewReader(string(data)))
		for {
			var o object
			if err := dec.Decode(&o.doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := o.doc.Decode(&o); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			o.File = f
			m.objects = append(m.objects, o)
		}
	}
	decode := func(kind, name string, v any) bool {
		for _, o := range m.objects {
			if o.Kind == kind && o.Metadata.Name == name {
				if err := o.doc.Decode(v); err != nil {
					t.Fatalf("%s %s in %s: %v", kind, name, o.File, err)
				}
				return true
			}
		}
		return false
	}
	var k struct {
		Resources       []string `yaml:"resources"`
		SecretGenerator []struct {
			Name  string   `yaml:"name"`
			Files []string `yaml:"files"`
		} `yaml:"secretGenerator"`
	}
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	var pol networkPolicy
	for _, must := range []struct {
		ok   bool
		what string
	}{
		{decode("Kustomization", "", &k), "the Kustomization"},
		{decode("ConfigMap", configName, &cm), "ConfigMap " + configName},
		{decode("Service", serviceName, &m.service), "Service " + serviceName},
		{decode("Job", coordinatorName, &m.coordinator), "Job " + coordinatorName},
		{decode("Job", nodesName, &m.nodes), "Job " + nodesName},
	} {
		if !must.ok {
			t.Fatalf("no %s in %v", must.what, files)
		}
	}
	m.resources, m.config = k.Resources, cm.Data
	m.secrets = map[string][]string{}
	for _, g := range k.SecretGenerator {
		m.secrets[g.Name] = g.Files
	}
	if decode("NetworkPolicy", serviceName, &pol) {
		m.policy = &pol
	}
	return m
}

// only returns the one container of j's pods.
func only(t *testing.T, what string, j *job) container {
	t.Helper()
	cs := j.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("%s has %d containers, want 1", what, len(cs))
	}
	return cs[0]
}

// flag returns the value of --name=VALUE among args.
func flag(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// variable is Kubernetes' substitution of a container's environment in
// its arguments: $(NAME).
var variable = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand substitutes $(NAME) in s from the container's ConfigMap as
// Kubernetes would.
func (m *manifests) expand(t *testing.T, c container, s string) string {
	t.Helper()
	return variable.ReplaceAllStringFunc(s, func(v string) string {
		name := variable.FindStringSubmatch(v)[1]
		val, ok := m.config[name]
		if !ok || !slices.ContainsFunc(c.EnvFrom, func(e envFrom) bool {
			return e.ConfigMapRef != nil && e.ConfigMapRef.Name == configName
		}) {
			t.Errorf("%s: $(%s) is not a key of ConfigMap %s given to the container", c.Name, name, configName)
		}
		return val
	})
}

// port is the Service's coordinator port.
func (m *manifests) port(t *testing.T) int {
	t.Helper()
	ps := m.service.Spec.Ports
	if len(ps) != 1 {
		t.Fatalf("Service %s has %d ports, want 1", serviceName, len(ps))
	}
	return ps[0].Port
}

// hostPort splits addr and parses its port.
func hostPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%q: %v", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%q: port %v", addr, err)
	}
	return host, port
}

// num writes an optional number of a manifest.
func num(p *int) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(*p)
}

// subset reports whether every label of sel is among labels.
func subset(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// TestManifests: the manifests parse and agree on the run's shape.
func TestManifests(t *testing.T) {
	m := load(t)
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"every document is a named object", func(t *testing.T) {
			for _, o := range m.objects {
				if o.APIVersion == "" || o.Kind == "" || o.Kind != "Kustomization" && o.Metadata.Name == "" {
					t.Errorf("%s: a document without apiVersion, kind or name: %+v", o.File, o)
				}
			}
		}},
		{"kustomization.yaml lists every manifest", func(t *testing.T) {
			want := slices.DeleteFunc(slices.Clone(m.files), func(f string) bool { return f == "kustomization.yaml" })
			got := slices.Sorted(slices.Values(m.resources))
			if !slices.Equal(got, want) {
				t.Errorf("resources %v, want the manifests %v", got, want)
			}
		}},
		{"the nodes are an Indexed Job, completions = parallelism", func(t *testing.T) {
			s := m.nodes.Spec
			if s.CompletionMode != "Indexed" {
				t.Errorf("completionMode %q, want Indexed", s.CompletionMode)
			}
			if s.Completions == nil || s.Parallelism == nil || *s.Completions < 1 || *s.Completions != *s.Parallelism {
				t.Errorf("completions %s, parallelism %s: want both, equal, every node at once", num(s.Completions), num(s.Parallelism))
			}
		}},
		{"a killed node is not started again", func(t *testing.T) {
			s := m.nodes.Spec
			if s.Template.Spec.RestartPolicy != "Never" {
				t.Errorf("node restartPolicy %q, want Never", s.Template.Spec.RestartPolicy)
			}
			if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 0 {
				t.Errorf("backoffLimitPerIndex %s, want 0", num(s.BackoffLimitPerIndex))
			}
			if s.BackoffLimit != nil {
				t.Errorf("backoffLimit %d set: once exceeded it deletes every other node's pod", *s.BackoffLimit)
			}
			if c := m.coordinator.Spec; c.Template.Spec.RestartPolicy != "Never" || c.BackoffLimit == nil || *c.BackoffLimit != 0 {
				t.Errorf("coordinator restartPolicy %q, backoffLimit %s: want Never, 0 (one sale)", c.Template.Spec.RestartPolicy, num(c.BackoffLimit))
			}
		}},
		{"each node runs lockbench node against the coordinator's Service", func(t *testing.T) {
			c := only(t, "the node Job", &m.nodes)
			cmd := append(slices.Clone(c.Command), c.Args...)
			if !slices.Contains(cmd, "node") {
				t.Errorf("node command %q has no node subcommand", cmd)
			}
			addr, ok := flag(cmd, "coordinator")
			if !ok {
				t.Fatalf("node command %q has no --coordinator=", cmd)
			}
			host, port := hostPort(t, addr)
			if host != serviceName || port != m.port(t) {
				t.Errorf("nodes dial %s, want the Service %s:%d", addr, serviceName, m.port(t))
			}
		}},
		{"the coordinator listens on its Service's port", func(t *testing.T) {
			c := only(t, "the coordinator Job", &m.coordinator)
			if mode, _ := flag(c.Args, "node-mode"); mode != "remote" {
				t.Errorf("coordinator --node-mode=%q, want remote", mode)
			}
			listen, ok := flag(c.Args, "coordinator-listen")
			if !ok {
				t.Fatalf("coordinator args %q have no --coordinator-listen=", c.Args)
			}
			_, port := hostPort(t, listen)
			if port != m.port(t) {
				t.Errorf("coordinator listens on %d, its Service's port is %d", port, m.port(t))
			}
			target := fmt.Sprint(m.service.Spec.Ports[0].TargetPort)
			if !slices.ContainsFunc(c.Ports, func(p containerPort) bool {
				return p.ContainerPort == port && (p.Name == target || strconv.Itoa(port) == target)
			}) {
				t.Errorf("the Service's targetPort %s is not the container's port %d", target, port)
			}
			if !subset(m.service.Spec.Selector, m.coordinator.Spec.Template.Metadata.Labels) {
				t.Errorf("Service selector %v does not select the coordinator's pods %v", m.service.Spec.Selector, m.coordinator.Spec.Template.Metadata.Labels)
			}
			if subset(m.service.Spec.Selector, m.nodes.Spec.Template.Metadata.Labels) {
				t.Errorf("Service selector %v selects the nodes' pods too", m.service.Spec.Selector)
			}
		}},
		{"the coordinator waits for as many nodes as the Job runs", func(t *testing.T) {
			c := only(t, "the coordinator Job", &m.coordinator)
			for _, a := range c.Args {
				m.expand(t, c, a) // every $(NAME) is a key of the ConfigMap
			}
			n, ok := flag(c.Args, "nodes")
			if !ok {
				t.Fatalf("coordinator args %q have no --nodes=", c.Args)
			}
			nodes, err := strconv.Atoi(m.expand(t, c, n))
			if err != nil || m.nodes.Spec.Completions == nil || nodes != *m.nodes.Spec.Completions {
				t.Errorf("coordinator --nodes=%s (%q), node Job completions %s: want equal", n, m.expand(t, c, n), num(m.nodes.Spec.Completions))
			}
			if r, _ := flag(c.Args, "redis"); m.expand(t, c, r) == "" {
				t.Errorf("coordinator --redis=%s is empty: the nodes need a Redis they all reach", r)
			}
		}},
		{"the run's node secret reaches the coordinator and every node from a Secret, never a command line", func(t *testing.T) {
			files, ok := m.secrets[nodeSecretName]
			if !ok || !slices.Contains(files, "secret="+nodeSecretFile) {
				t.Fatalf("kustomization.yaml generates no Secret %s from %s: %v", nodeSecretName, nodeSecretFile, m.secrets)
			}
			ignore, err := os.ReadFile(".gitignore")
			if err != nil || !slices.Contains(strings.Fields(string(ignore)), nodeSecretFile) {
				t.Errorf(".gitignore does not keep %s out of the repository: %v", nodeSecretFile, err)
			}
			for _, j := range []*job{&m.coordinator, &m.nodes} {
				c := only(t, "a Job", j)
				i := slices.IndexFunc(c.Env, func(e envVar) bool { return e.Name == "LOCKBENCH_NODE_SECRET" })
				if i < 0 {
					t.Errorf("container %s has no $LOCKBENCH_NODE_SECRET", c.Name)
					continue
				}
				e := c.Env[i]
				if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name != nodeSecretName || e.ValueFrom.SecretKeyRef.Key != "secret" || e.ValueFrom.SecretKeyRef.Optional {
					t.Errorf("container %s: $LOCKBENCH_NODE_SECRET is not the Secret %s's key secret, required: %+v", c.Name, nodeSecretName, e)
				}
				for _, a := range append(slices.Clone(c.Command), c.Args...) {
					if strings.Contains(a, "secret") {
						t.Errorf("container %s: a secret on the command line (%q), which anyone on the machine reads", c.Name, a)
					}
				}
			}
		}},
		{"every container asks for cpu and memory", func(t *testing.T) {
			for _, j := range []*job{&m.coordinator, &m.nodes} {
				for _, c := range j.Spec.Template.Spec.Containers {
					if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" {
						t.Errorf("container %s requests %v, want cpu and memory", c.Name, c.Resources.Requests)
					}
				}
			}
		}},
		{"the network policy admits the nodes to the coordinator's port", func(t *testing.T) {
			if m.policy == nil {
				t.Skip("no NetworkPolicy (it is optional)")
			}
			p := m.policy.Spec
			if !subset(p.PodSelector.MatchLabels, m.coordinator.Spec.Template.Metadata.Labels) {
				t.Errorf("policy selects %v, not the coordinator's pods", p.PodSelector.MatchLabels)
			}
			admitted := false
			for _, in := range p.Ingress {
				for _, from := range in.From {
					for _, port := range in.Ports {
						admitted = admitted || subset(from.PodSelector.MatchLabels, m.nodes.Spec.Template.Metadata.Labels) && port.Port == m.port(t)
					}
				}
			}
			if !admitted {
				t.Errorf("no ingress rule admits the node pods %v to port %d", m.nodes.Spec.Template.Metadata.Labels, m.port(t))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
