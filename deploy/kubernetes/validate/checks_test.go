package validate

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
)

// The relay's settings the checks read, and the values it takes when they
// are not set (`cdc-relay run --help`).
const (
	metricsAddrVar     = "CDC_RELAY_METRICS_ADDR"
	stopTimeoutVar     = "CDC_RELAY_STOP_TIMEOUT"
	defaultStopTimeout = 30 * time.Second
	metricsPort        = 7187
	// stopMargin is what the grace period must leave after the stop timeout:
	// the time to close the connections and exit once it is over.
	stopMargin = 10 * time.Second
)

// secretVars are the relay's secrets, which must never be a variable's
// value, by the variable of the file that may hold each.
var secretVars = map[string]string{
	"CDC_RELAY_POSTGRES_URL":        "CDC_RELAY_POSTGRES_URL_FILE",
	"CDC_RELAY_ADMIN_TOKEN":         "CDC_RELAY_ADMIN_TOKEN_FILE",
	"CDC_RELAY_KAFKA_SASL_PASSWORD": "CDC_RELAY_KAFKA_SASL_PASSWORD_FILE",
}

// check looks at the rendered manifests and returns what is wrong, one
// sentence each; none when all is well.
type check func(m manifests) []string

// checks are what the relay needs of its manifests, by name.
var checks = map[string]check{
	"two replicas":               checkReplicas,
	"runs the relay":             checkContainer,
	"probes on the metrics port": checkProbes,
	"grace above stop timeout":   checkGracePeriod,
	"no secret in a variable":    checkNoSecretValues,
	"secrets as files":           checkSecretFiles,
	"admin token off loopback":   checkAdminToken,
	"non-root, read-only":        checkSecurity,
	"selectors find the pods":    checkSelectors,
	"scraped as job cdc-relay":   checkServiceMonitor,
}

// relayContainer returns the Deployment's pod spec and its container
// cdc-relay, or nil when there is not exactly one Deployment with it.
func relayContainer(m manifests) (*corev1.PodSpec, *corev1.Container) {
	if len(m.deployments) != 1 {
		return nil, nil
	}
	spec := &m.deployments[0].Spec.Template.Spec
	for i := range spec.Containers {
		if spec.Containers[i].Name == "cdc-relay" {
			return spec, &spec.Containers[i]
		}
	}
	return spec, nil
}

// withContainer runs f on the relay's container, or reports that there is
// none.
func withContainer(m manifests, f func(spec *corev1.PodSpec, c *corev1.Container) []string) []string {
	spec, c := relayContainer(m)
	if c == nil {
		return []string{fmt.Sprintf("want one Deployment with a container cdc-relay, got %d Deployments", len(m.deployments))}
	}
	return f(spec, c)
}

// env returns the container's variables as the kubelet sets them: those of
// its ConfigMaps (envFrom), then its own env, which win. A variable from a
// Secret or a field has the value "<from NAME>".
func env(m manifests, c *corev1.Container) map[string]string {
	vars := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef != nil {
			for k, v := range m.configMaps[from.ConfigMapRef.Name].Data {
				vars[from.Prefix+k] = v
			}
		}
	}
	for _, e := range c.Env {
		vars[e.Name] = e.Value
		if e.ValueFrom != nil {
			vars[e.Name] = "<from " + e.Name + ">"
		}
	}
	return vars
}

func checkReplicas(m manifests) []string {
	if len(m.deployments) != 1 {
		return []string{fmt.Sprintf("want one Deployment, got %d", len(m.deployments))}
	}
	if r := m.deployments[0].Spec.Replicas; r == nil || *r != 2 {
		got := "unset (1)"
		if r != nil {
			got = strconv.Itoa(int(*r))
		}
		return []string{fmt.Sprintf("replicas %s: want 2, a leader and a standby", got)}
	}
	return nil
}

// releaseRepository is the image the releases publish (make release,
// scripts/image) and the manifests run.
const releaseRepository = "ghcr.io/cdc-relay/cdc-relay"

// releaseImage is the image the manifests run by default: releaseRepository
// at v<the chart's appVersion>, the tag of the release the chart comes with.
func releaseImage() (string, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return "", err
	}
	return releaseRepository + ":v" + strings.TrimPrefix(ch.Metadata.AppVersion, "v"), nil
}

// checkContainer: the container runs the relay (args run) of the release's
// image, at the tag of the chart's appVersion: the kustomize base's newTag
// and the chart's appVersion name one release.
func checkContainer(m manifests) []string {
	image, err := releaseImage()
	if err != nil {
		return []string{fmt.Sprintf("reading the chart's appVersion: %v", err)}
	}
	return withContainer(m, func(_ *corev1.PodSpec, c *corev1.Container) []string {
		var bad []string
		if len(c.Args) == 0 || c.Args[0] != "run" {
			bad = append(bad, fmt.Sprintf("args %q: want run", c.Args))
		}
		if c.Image != image {
			bad = append(bad, fmt.Sprintf("image %q: want the release's, %s (a release sets the base's newTag and the chart's appVersion, CONTRIBUTING.md)", c.Image, image))
		}
		return bad
	})
}

// checkProbes: liveness on /healthz, readiness on /readyz, both on the
// named port metrics, which is 7187, the port the relay listens on
// (CDC_RELAY_METRICS_ADDR), the Service's port metrics and the port of the
// pods' prometheus.io/port annotation.
func checkProbes(m manifests) []string {
	return withContainer(m, func(_ *corev1.PodSpec, c *corev1.Container) []string {
		var bad []string
		bad = append(bad, probeProblems("liveness", c.LivenessProbe, "/healthz")...)
		bad = append(bad, probeProblems("readiness", c.ReadinessProbe, "/readyz")...)
		var port int32
		for _, p := range c.Ports {
			if p.Name == "metrics" {
				port = p.ContainerPort
			}
		}
		if port != metricsPort {
			bad = append(bad, fmt.Sprintf("container port metrics is %d, want %d", port, metricsPort))
		}
		if a, ok := m.deployments[0].Spec.Template.Annotations["prometheus.io/port"]; ok && a != strconv.Itoa(int(port)) {
			bad = append(bad, fmt.Sprintf("the pods' annotation prometheus.io/port is %q, want the port metrics, %d", a, port))
		}
		addr := env(m, c)[metricsAddrVar]
		if _, p, err := net.SplitHostPort(addr); err != nil || p != strconv.Itoa(int(port)) {
			bad = append(bad, fmt.Sprintf("%s=%q: want the relay to listen on the port metrics, %d, on all interfaces", metricsAddrVar, addr, port))
		}
		return append(bad, servicePortProblems(m)...)
	})
}

func probeProblems(name string, p *corev1.Probe, wantPath string) []string {
	if p == nil || p.HTTPGet == nil {
		return []string{fmt.Sprintf("no %s probe by HTTP GET", name)}
	}
	var bad []string
	if p.HTTPGet.Path != wantPath {
		bad = append(bad, fmt.Sprintf("%s probe on %q, want %s", name, p.HTTPGet.Path, wantPath))
	}
	if p.HTTPGet.Port.String() != "metrics" {
		bad = append(bad, fmt.Sprintf("%s probe on port %s, want the named port metrics", name, p.HTTPGet.Port.String()))
	}
	return bad
}

func servicePortProblems(m manifests) []string {
	if len(m.services) != 1 {
		return []string{fmt.Sprintf("want one Service, got %d", len(m.services))}
	}
	for _, p := range m.services[0].Spec.Ports {
		if p.Name == "metrics" && p.Port == metricsPort && p.TargetPort.String() == "metrics" {
			return nil
		}
	}
	return []string{fmt.Sprintf("the Service has no port metrics (%d, to the container's port metrics): %+v", metricsPort, m.services[0].Spec.Ports)}
}

// checkGracePeriod: Kubernetes kills the relay terminationGracePeriodSeconds
// after SIGTERM; the relay may take the stop timeout, then needs a moment
// to exit.
func checkGracePeriod(m manifests) []string {
	return withContainer(m, func(spec *corev1.PodSpec, c *corev1.Container) []string {
		stop := defaultStopTimeout
		if v, ok := env(m, c)[stopTimeoutVar]; ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				return []string{fmt.Sprintf("%s=%q: %v", stopTimeoutVar, v, err)}
			}
			stop = d
		}
		grace := 30 * time.Second // Kubernetes' default
		if spec.TerminationGracePeriodSeconds != nil {
			grace = time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
		}
		if grace < stop+stopMargin {
			return []string{fmt.Sprintf("terminationGracePeriodSeconds %s: want at least the stop timeout %s + %s, or a slow stop is killed", grace, stop, stopMargin)}
		}
		return nil
	})
}

// checkNoSecretValues: no secret is a variable, by value, from a Secret or
// in a ConfigMap.
func checkNoSecretValues(m manifests) []string {
	return withContainer(m, func(_ *corev1.PodSpec, c *corev1.Container) []string {
		var bad []string
		vars := env(m, c)
		for name, fileVar := range secretVars {
			if _, ok := vars[name]; ok {
				bad = append(bad, fmt.Sprintf("%s is a variable: mount it from a Secret and set %s", name, fileVar))
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				bad = append(bad, fmt.Sprintf("%s comes from Secret %s: mount the Secret as files instead", e.Name, e.ValueFrom.SecretKeyRef.Name))
			}
		}
		for _, from := range c.EnvFrom {
			if from.SecretRef != nil {
				bad = append(bad, fmt.Sprintf("envFrom Secret %s: mount the Secret as files instead", from.SecretRef.Name))
			}
		}
		return bad
	})
}

// checkSecretFiles: the PostgreSQL URL comes from a file, and each *_FILE
// of a secret names a file of a read-only Secret volume, whose key the
// Secret holds when the kustomization makes it.
func checkSecretFiles(m manifests) []string {
	return withContainer(m, func(spec *corev1.PodSpec, c *corev1.Container) []string {
		var bad []string
		vars := env(m, c)
		if _, ok := vars["CDC_RELAY_POSTGRES_URL_FILE"]; !ok {
			bad = append(bad, "CDC_RELAY_POSTGRES_URL_FILE is not set: the relay has no PostgreSQL URL")
		}
		for _, fileVar := range secretVars {
			if file, ok := vars[fileVar]; ok {
				bad = append(bad, secretFileProblems(m, spec, c, fileVar, file)...)
			}
		}
		return bad
	})
}

// secretFileProblems says what is wrong with file as a file of a Secret.
func secretFileProblems(m manifests, spec *corev1.PodSpec, c *corev1.Container, fileVar, file string) []string {
	for _, mount := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(file, strings.TrimSuffix(mount.MountPath, "/")+"/")
		if !ok {
			continue
		}
		if !mount.ReadOnly {
			return []string{fmt.Sprintf("%s=%s: the mount %s is not read-only", fileVar, file, mount.MountPath)}
		}
		for _, v := range spec.Volumes {
			if v.Name == mount.Name {
				return secretItemProblems(m, secretSources(v), fileVar, rel)
			}
		}
		return []string{fmt.Sprintf("%s=%s: the pod has no volume %s", fileVar, file, mount.Name)}
	}
	return []string{fmt.Sprintf("%s=%s: no volume is mounted there", fileVar, file)}
}

// secretSources returns the Secrets a volume projects, or its Secret.
func secretSources(v corev1.Volume) []corev1.SecretProjection {
	var sources []corev1.SecretProjection
	if s := v.Secret; s != nil {
		sources = append(sources, corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: s.SecretName}, Items: s.Items, Optional: s.Optional})
	}
	if p := v.Projected; p != nil {
		for _, src := range p.Sources {
			if src.Secret != nil {
				sources = append(sources, *src.Secret)
			}
		}
	}
	return sources
}

// secretItemProblems says whether the file rel of a volume made of
// sources is a key of a Secret.
func secretItemProblems(m manifests, sources []corev1.SecretProjection, fileVar, rel string) []string {
	for _, src := range sources {
		for _, item := range src.Items {
			if item.Path != rel {
				continue
			}
			secret, made := m.secrets[src.Name]
			if !made {
				return nil // made outside the kustomization
			}
			if _, ok := secret.Data[item.Key]; ok {
				return nil
			}
			if _, ok := secret.StringData[item.Key]; ok {
				return nil
			}
			return []string{fmt.Sprintf("%s: Secret %s has no key %s", fileVar, src.Name, item.Key)}
		}
	}
	return []string{fmt.Sprintf("%s: the volume has no Secret item with the path %s", fileVar, rel)}
}

// checkAdminToken: on an address other than loopback the admin endpoints
// need a token; the manifests give it as a file.
func checkAdminToken(m manifests) []string {
	return withContainer(m, func(_ *corev1.PodSpec, c *corev1.Container) []string {
		vars := env(m, c)
		host, _, err := net.SplitHostPort(vars[metricsAddrVar])
		if err != nil {
			return []string{fmt.Sprintf("%s=%q: %v", metricsAddrVar, vars[metricsAddrVar], err)}
		}
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
		if _, ok := vars["CDC_RELAY_ADMIN_TOKEN_FILE"]; !ok {
			return []string{fmt.Sprintf("%s=%s is not loopback, and CDC_RELAY_ADMIN_TOKEN_FILE is not set: the admin endpoints need a token there", metricsAddrVar, vars[metricsAddrVar])}
		}
		return nil
	})
}

// checkSecurity: the pod runs as the image's user 65534, never root, on a
// read-only root file system, with no capability.
func checkSecurity(m manifests) []string {
	return withContainer(m, func(spec *corev1.PodSpec, c *corev1.Container) []string {
		var bad []string
		pod, sc := spec.SecurityContext, c.SecurityContext
		if pod == nil || sc == nil {
			return []string{"want a pod and a container securityContext"}
		}
		isTrue := func(b *bool) bool { return b != nil && *b }
		if !isTrue(pod.RunAsNonRoot) || pod.RunAsUser == nil || *pod.RunAsUser != 65534 || pod.RunAsGroup == nil || *pod.RunAsGroup != 65534 {
			bad = append(bad, "want runAsNonRoot, runAsUser 65534 and runAsGroup 65534 on the pod")
		}
		if pod.SeccompProfile == nil || pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			bad = append(bad, "want seccompProfile RuntimeDefault on the pod")
		}
		if !isTrue(sc.ReadOnlyRootFilesystem) {
			bad = append(bad, "want readOnlyRootFilesystem")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad = append(bad, "want allowPrivilegeEscalation false")
		}
		if sc.Privileged != nil && *sc.Privileged {
			bad = append(bad, "the container is privileged")
		}
		if sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) > 0 {
			bad = append(bad, "want capabilities drop ALL, none added")
		}
		return bad
	})
}

// checkSelectors: the Service and the disruption budget select the
// Deployment's pods.
func checkSelectors(m manifests) []string {
	if len(m.deployments) != 1 || len(m.services) != 1 || len(m.pdbs) != 1 {
		return []string{fmt.Sprintf("want a Deployment, a Service and a PodDisruptionBudget, got %d, %d and %d", len(m.deployments), len(m.services), len(m.pdbs))}
	}
	pods := m.deployments[0].Spec.Template.Labels
	selects := func(sel map[string]string) bool {
		for k, v := range sel {
			if pods[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	var bad []string
	if !selects(m.deployments[0].Spec.Selector.MatchLabels) {
		bad = append(bad, "the Deployment's selector does not select its pods")
	}
	if !selects(m.services[0].Spec.Selector) {
		bad = append(bad, fmt.Sprintf("the Service selects %v, not the pods (%v)", m.services[0].Spec.Selector, pods))
	}
	if sel := m.pdbs[0].Spec.Selector; sel == nil || !selects(sel.MatchLabels) {
		bad = append(bad, "the PodDisruptionBudget does not select the pods")
	}
	return bad
}

// alertsJob is the job label docker/alerts.yaml wants of every relay
// (CdcRelayDown matches up{job="cdc-relay"}).
const alertsJob = "cdc-relay"

// checkServiceMonitor: each ServiceMonitor selects the Service, scrapes its
// port metrics at /metrics, and sets the label job to cdc-relay by a
// relabeling that nothing after it changes; without that, Prometheus would
// name the job after the Service and CdcRelayDown would never fire.
// Manifests without a ServiceMonitor pass.
func checkServiceMonitor(m manifests) []string {
	var bad []string
	for _, sm := range m.serviceMonitors {
		if len(m.services) != 1 {
			return []string{fmt.Sprintf("ServiceMonitor %s: want one Service to scrape, got %d", sm.Name, len(m.services))}
		}
		svc := m.services[0]
		for k, v := range sm.Spec.Selector.MatchLabels {
			if svc.Labels[k] != v {
				bad = append(bad, fmt.Sprintf("ServiceMonitor %s selects %s=%s, which the Service %s does not have (%v)", sm.Name, k, v, svc.Name, svc.Labels))
			}
		}
		if len(sm.Spec.Selector.MatchLabels) == 0 || len(sm.Spec.Selector.MatchExpressions) > 0 {
			bad = append(bad, fmt.Sprintf("ServiceMonitor %s: want a selector of matchLabels only, got %+v", sm.Name, sm.Spec.Selector))
		}
		if len(sm.Spec.Endpoints) != 1 {
			bad = append(bad, fmt.Sprintf("ServiceMonitor %s: want one endpoint, got %d", sm.Name, len(sm.Spec.Endpoints)))
			continue
		}
		ep := sm.Spec.Endpoints[0]
		if ep.Port != "metrics" || (ep.Path != "" && ep.Path != "/metrics") {
			bad = append(bad, fmt.Sprintf("ServiceMonitor %s: want the endpoint port metrics, path /metrics", sm.Name))
		}
		job := ""
		for _, r := range ep.RelabelConfigs {
			if r.TargetLabel == "job" && (r.Action == "" || strings.EqualFold(r.Action, "replace")) && len(r.SourceLabels) == 0 {
				if r.Replacement != nil {
					job = *r.Replacement
				}
			} else if r.TargetLabel == "job" || strings.HasPrefix(strings.ToLower(r.Action), "label") {
				job = "<changed by a relabeling>"
			}
		}
		if job != alertsJob && !strings.HasPrefix(job, alertsJob+"-") {
			bad = append(bad, fmt.Sprintf("ServiceMonitor %s: the job label is %q: want a relabeling {targetLabel: job, replacement: %s (or %s-NAME)} last, as docker/alerts.yaml's CdcRelayDown matches those", sm.Name, job, alertsJob, alertsJob))
		}
	}
	return bad
}
