package plugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"

	kafkalinkclient "github.com/kafkalink/kafkalink/generated/clientset/versioned"
	"github.com/kafkalink/kafkalink/pkg/clientconfig"
	"github.com/kafkalink/kafkalink/pkg/version"
)

// Kinds the commands take, by their canonical name.
const (
	KindConnection = "KafkaConnection"
	KindGateway    = "KafkaGateway"
	KindRoute      = "KafkaRoute"
)

// kindAliases maps what users type (plural, singular, short name) to a kind.
var kindAliases = map[string]string{
	"kafkaconnection": KindConnection, "kafkaconnections": KindConnection, "kconn": KindConnection, "connection": KindConnection,
	"kafkagateway": KindGateway, "kafkagateways": KindGateway, "kgw": KindGateway, "gateway": KindGateway,
	"kafkaroute": KindRoute, "kafkaroutes": KindRoute, "kroute": KindRoute, "route": KindRoute,
}

// ParseRef reads KIND/NAME (kind in any of kubectl's spellings, with or without its group).
func ParseRef(s string) (kind, name string, err error) {
	k, n, ok := strings.Cut(s, "/")
	if !ok || n == "" {
		return "", "", fmt.Errorf("%q is not KIND/NAME (for example kafkaconnection/orders)", s)
	}
	k, _, _ = strings.Cut(strings.ToLower(k), ".")
	kind, ok = kindAliases[k]
	if !ok {
		return "", "", fmt.Errorf("unknown kind %q: use kafkaconnection, kafkagateway or kafkaroute", k)
	}
	return kind, n, nil
}

// options are the flags every command shares.
type options struct {
	kubeconfig, context, namespace string
	allNamespaces, noColour        bool
	out, errOut                    io.Writer
	// colourOut reports whether out is a terminal that takes colour.
	colourOut bool
}

// NewCommand is kubectl kafkalink with its subcommands, writing to out and errOut; colourOut
// says whether out is a terminal (colour is used then, unless --no-color or NO_COLOR).
func NewCommand(out, errOut io.Writer, colourOut bool) *cobra.Command {
	o := &options{out: out, errOut: errOut, colourOut: colourOut}
	root := &cobra.Command{
		Use:           "kubectl-kafkalink",
		Short:         "Status, diagnosis and client configuration of kafkalink's KafkaGateways and KafkaConnections",
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	f := root.PersistentFlags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "the kubeconfig context to use")
	f.StringVarP(&o.namespace, "namespace", "n", "", "the namespace (default: the context's)")
	f.BoolVar(&o.noColour, "no-color", false, "never colour the output (NO_COLOR in the environment does the same)")
	root.AddCommand(o.statusCommand(), o.whyCommand(), o.configCommand())
	return root
}

func (o *options) colour() bool {
	return o.colourOut && !o.noColour && os.Getenv("NO_COLOR") == ""
}

// clients loads the kubeconfig as kubectl does and returns the clients and the namespace.
func (o *options) clients() (*Clients, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	overrides.Context.Namespace = o.namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", err
	}
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", err
	}
	cfg.UserAgent = "kubectl-kafkalink/" + version.Version
	c := &Clients{}
	if c.Core, err = corev1client.NewForConfig(cfg); err != nil {
		return nil, "", err
	}
	if c.Discovery, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		return nil, "", err
	}
	if c.Kafkalink, err = kafkalinkclient.NewForConfig(cfg); err != nil {
		return nil, "", err
	}
	if c.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, "", err
	}
	return c, ns, nil
}

func (o *options) statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [KIND/NAME]",
		Short: "The tree of a KafkaGateway, KafkaRoute or KafkaConnection with each object's key condition; without KIND/NAME, every gateway and connection of the namespace",
		Example: `  kubectl kafkalink status kafkaconnection/orders
  kubectl kafkalink status kafkagateway/my-proxy -n kafka
  kubectl kafkalink status -A`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.clients()
			if err != nil {
				return err
			}
			var roots []*Node
			if len(args) == 1 {
				root, err := o.tree(cmd.Context(), c, ns, args[0])
				if err != nil {
					return err
				}
				roots = []*Node{root}
			} else if roots, err = o.everything(cmd.Context(), c, ns); err != nil {
				return err
			}
			return Render(o.out, roots, o.colour())
		},
	}
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "every namespace")
	return cmd
}

func (o *options) whyCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "why KIND/NAME",
		Short:   "The failing conditions of a KafkaGateway, KafkaRoute or KafkaConnection and of what it depends on: reason, meaning, what to do",
		Example: "  kubectl kafkalink why kafkaconnection/orders",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.clients()
			if err != nil {
				return err
			}
			root, err := o.tree(cmd.Context(), c, ns, args[0])
			if err != nil {
				return err
			}
			_, err = io.WriteString(o.out, Why(root))
			return err
		},
	}
}

// tree gathers and builds the tree of one object.
func (o *options) tree(ctx context.Context, c *Clients, ns, ref string) (*Node, error) {
	kind, name, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	kl := c.Kafkalink
	switch kind {
	case KindConnection:
		conn, err := kl.KafkaV1beta2().KafkaConnections(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		w, err := c.GatherConnection(ctx, conn)
		return ConnectionTree(w), err
	case KindGateway:
		g, err := kl.KroxyliciousV1alpha1().KafkaGateways(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		w, err := c.GatherGateway(ctx, g)
		return GatewayTree(w), err
	default:
		r, err := kl.KroxyliciousV1alpha1().KafkaRoutes(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return RouteTree(r), nil
	}
}

// everything is the tree of every gateway, then every connection, of the namespace (or all).
func (o *options) everything(ctx context.Context, c *Clients, ns string) ([]*Node, error) {
	if o.allNamespaces {
		ns = metav1.NamespaceAll
	}
	gateways, err := c.Kafkalink.KroxyliciousV1alpha1().KafkaGateways(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var roots []*Node
	for i := range gateways.Items {
		w, err := c.GatherGateway(ctx, &gateways.Items[i])
		if err != nil {
			return nil, err
		}
		roots = append(roots, GatewayTree(w))
	}
	conns, err := c.Kafkalink.KafkaV1beta2().KafkaConnections(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range conns.Items {
		w, err := c.GatherConnection(ctx, &conns.Items[i])
		if err != nil {
			return nil, err
		}
		roots = append(roots, ConnectionTree(w))
	}
	if len(roots) == 0 {
		fmt.Fprintf(o.errOut, "no KafkaGateways or KafkaConnections in %s\n", describeNamespace(ns))
	}
	return roots, nil
}

func describeNamespace(ns string) string {
	if ns == metav1.NamespaceAll {
		return "any namespace"
	}
	return "namespace " + ns
}

func (o *options) configCommand() *cobra.Command {
	var client, dir string
	cmd := &cobra.Command{
		Use:   "config CONNECTION --client CLIENT [--dir DIR]",
		Short: "Write a client's own configuration from a KafkaConnection's binding Secret",
		Long: `Reads the binding Secret of the KafkaConnection (status.binding.name) and writes the client's
configuration: a properties file or code as the client takes it, and the key material as files.
Without --dir, prints the configuration and lists the files it would write.`,
		Example: `  kubectl kafkalink config orders --client kcat --dir ./orders && kcat -F ./orders/kcat.conf -L
  kubectl kafkalink config orders --client spring`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ns, err := o.clients()
			if err != nil {
				return err
			}
			return o.config(cmd.Context(), c, ns, args[0], clientconfig.Client(client), dir)
		},
	}
	names := make([]string, len(clientconfig.Clients))
	for i, c := range clientconfig.Clients {
		names[i] = string(c)
	}
	cmd.Flags().StringVar(&client, "client", "", "the client: "+strings.Join(names, ", "))
	cmd.Flags().StringVar(&dir, "dir", "", "write the files into this folder (created if missing)")
	_ = cmd.MarkFlagRequired("client")
	return cmd
}

func (o *options) config(ctx context.Context, c *Clients, ns, ref string, client clientconfig.Client, dir string) error {
	name := ref
	if strings.Contains(ref, "/") {
		kind, n, err := ParseRef(ref)
		if err != nil {
			return err
		}
		if kind != KindConnection {
			return fmt.Errorf("config takes a KafkaConnection, not a %s", kind)
		}
		name = n
	}
	conn, err := c.Kafkalink.KafkaV1beta2().KafkaConnections(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if conn.Status.Binding == nil || conn.Status.Binding.Name == "" {
		return fmt.Errorf("KafkaConnection %s/%s has no binding yet; kubectl kafkalink why kafkaconnection/%s says why", ns, name, name)
	}
	secret, err := c.Core.Secrets(ns).Get(ctx, conn.Status.Binding.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	b, err := clientconfig.ParseBinding(key(ns, name), secret.Data)
	if err != nil {
		return fmt.Errorf("binding Secret %s/%s: %w", ns, secret.Name, err)
	}
	target := "."
	if dir != "" {
		if target, err = filepath.Abs(dir); err != nil {
			return err
		}
	}
	out, err := clientconfig.Render(client, b, target)
	if err != nil {
		return err
	}
	if dir == "" {
		return o.printConfig(out)
	}
	return o.writeConfig(out, target)
}

// printConfig prints the configuration and names the files only --dir writes.
func (o *options) printConfig(out *clientconfig.Output) error {
	if _, err := o.out.Write(out.Files[0].Data); err != nil {
		return err
	}
	var rest []string
	for _, f := range out.Files[1:] {
		rest = append(rest, f.Name)
	}
	if len(rest) > 0 {
		fmt.Fprintf(o.errOut, "with --dir DIR, also writes %s, which the configuration names relative to the current folder\n", strings.Join(rest, ", "))
	}
	return nil
}

// writeConfig writes every file, secrets readable by their owner only.
func (o *options) writeConfig(out *clientconfig.Output, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range out.Files {
		mode := os.FileMode(0o644)
		if f.Secret {
			mode = 0o600
		}
		path := filepath.Join(dir, f.Name)
		if err := os.WriteFile(path, f.Data, mode); err != nil {
			return err
		}
		// WriteFile keeps an existing file's mode; a secret must not stay readable.
		if err := os.Chmod(path, mode); err != nil {
			return err
		}
		fmt.Fprintf(o.out, "wrote %s\n", path)
	}
	fmt.Fprintf(o.out, "use: %s\n", out.Usage)
	return nil
}
