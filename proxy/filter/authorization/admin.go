package authorization

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalink/kafkalink/proxy/acl"
	"github.com/kafkalink/kafkalink/proxy/filter"
)

var clusterDenied = kerr.ClusterAuthorizationFailed.Code

// configResource is what a config resource is checked as: its type, name and the error when
// denied. Brokers, broker loggers and client-metrics subscriptions are the cluster's.
func configResource(t kmsg.ConfigResourceType, name string) (acl.Type, string, int16) {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return acl.Topic, name, topicDenied
	case kmsg.ConfigResourceTypeGroupConfig:
		return acl.Group, name, groupDenied
	}
	return acl.Cluster, clusterName, clusterDenied
}

func configAllowed(v *acl.View, t kmsg.ConfigResourceType, name string, op acl.Op) (bool, int16) {
	typ, n, code := configResource(t, name)
	return v.Allows(typ, n, op), code
}

// describeConfigs: DESCRIBE_CONFIGS on each resource.
func describeConfigs(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.DescribeConfigsRequest)
	keep, denied := split(r.Resources, func(res *kmsg.DescribeConfigsRequestResource) bool {
		ok, _ := configAllowed(v, res.ResourceType, res.ResourceName, acl.DescribeConfigs)
		return ok
	})
	if len(denied) == 0 {
		return nil, false
	}
	r.Resources = keep
	return func(resp kmsg.Response, _ *acl.View) {
		dr := resp.(*kmsg.DescribeConfigsResponse)
		for _, res := range denied {
			_, _, code := configResource(res.ResourceType, res.ResourceName)
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			dr.Resources = append(dr.Resources, rr)
		}
	}, len(keep) == 0
}

// alterConfigs: ALTER_CONFIGS on each resource.
func alterConfigs(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.AlterConfigsRequest)
	keep, denied := split(r.Resources, func(res *kmsg.AlterConfigsRequestResource) bool {
		ok, _ := configAllowed(v, res.ResourceType, res.ResourceName, acl.AlterConfigs)
		return ok
	})
	if len(denied) == 0 {
		return nil, false
	}
	r.Resources = keep
	return func(resp kmsg.Response, _ *acl.View) {
		ar := resp.(*kmsg.AlterConfigsResponse)
		for _, res := range denied {
			_, _, code := configResource(res.ResourceType, res.ResourceName)
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			ar.Resources = append(ar.Resources, rr)
		}
	}, len(keep) == 0
}

// incrementalAlterConfigs: ALTER_CONFIGS on each resource.
func incrementalAlterConfigs(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.IncrementalAlterConfigsRequest)
	keep, denied := split(r.Resources, func(res *kmsg.IncrementalAlterConfigsRequestResource) bool {
		ok, _ := configAllowed(v, res.ResourceType, res.ResourceName, acl.AlterConfigs)
		return ok
	})
	if len(denied) == 0 {
		return nil, false
	}
	r.Resources = keep
	return func(resp kmsg.Response, _ *acl.View) {
		ar := resp.(*kmsg.IncrementalAlterConfigsResponse)
		for _, res := range denied {
			_, _, code := configResource(res.ResourceType, res.ResourceName)
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			ar.Resources = append(ar.Resources, rr)
		}
	}, len(keep) == 0
}

// clusterAnswer checks op on the cluster; denied, fill builds the answer's per-item errors.
func clusterAnswer(v *acl.View, op acl.Op, fill func(resp kmsg.Response)) (pending, bool) {
	if v.Allows(acl.Cluster, clusterName, op) {
		return nil, false
	}
	return func(resp kmsg.Response, _ *acl.View) {
		setTopError(resp, clusterDenied)
		fill(resp)
	}, true
}

// createACLs: ALTER on the cluster; each creation gets the error.
func createACLs(x *filter.Exchange, v *acl.View) (pending, bool) {
	n := len(x.Request.(*kmsg.CreateACLsRequest).Creations)
	return clusterAnswer(v, acl.Alter, func(resp kmsg.Response) {
		cr := resp.(*kmsg.CreateACLsResponse)
		for range n {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = clusterDenied
			cr.Results = append(cr.Results, res)
		}
	})
}

// deleteACLs: ALTER on the cluster; each filter gets the error.
func deleteACLs(x *filter.Exchange, v *acl.View) (pending, bool) {
	n := len(x.Request.(*kmsg.DeleteACLsRequest).Filters)
	return clusterAnswer(v, acl.Alter, func(resp kmsg.Response) {
		dr := resp.(*kmsg.DeleteACLsResponse)
		for range n {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = clusterDenied
			dr.Results = append(dr.Results, res)
		}
	})
}

// describeLogDirs: DESCRIBE on the cluster (before v3 the answer has no error: no dirs).
func describeLogDirs(_ *filter.Exchange, v *acl.View) (pending, bool) {
	return clusterAnswer(v, acl.Describe, func(kmsg.Response) {})
}

// alterReplicaLogDirs: ALTER on the cluster; each partition gets the error.
func alterReplicaLogDirs(x *filter.Exchange, v *acl.View) (pending, bool) {
	dirs := x.Request.(*kmsg.AlterReplicaLogDirsRequest).Dirs
	return clusterAnswer(v, acl.Alter, func(resp kmsg.Response) {
		ar := resp.(*kmsg.AlterReplicaLogDirsResponse)
		for _, d := range dirs {
			for _, t := range d.Topics {
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, clusterDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				ar.Topics = append(ar.Topics, rt)
			}
		}
	})
}

// electLeaders: ALTER on the cluster; each partition gets the error (v0 has no top-level one).
func electLeaders(x *filter.Exchange, v *acl.View) (pending, bool) {
	topics := x.Request.(*kmsg.ElectLeadersRequest).Topics
	return clusterAnswer(v, acl.Alter, func(resp kmsg.Response) {
		er := resp.(*kmsg.ElectLeadersResponse)
		for _, t := range topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, clusterDenied
				rt.Partitions = append(rt.Partitions, rp)
			}
			er.Topics = append(er.Topics, rt)
		}
	})
}

// alterClientQuotas: ALTER_CONFIGS on the cluster; each entry gets the error.
func alterClientQuotas(x *filter.Exchange, v *acl.View) (pending, bool) {
	entries := x.Request.(*kmsg.AlterClientQuotasRequest).Entries
	return clusterAnswer(v, acl.AlterConfigs, func(resp kmsg.Response) {
		ar := resp.(*kmsg.AlterClientQuotasResponse)
		for _, e := range entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			re.ErrorCode = clusterDenied
			for _, en := range e.Entity {
				ren := kmsg.NewAlterClientQuotasResponseEntryEntity()
				ren.Type, ren.Name = en.Type, en.Name
				re.Entity = append(re.Entity, ren)
			}
			ar.Entries = append(ar.Entries, re)
		}
	})
}

// alterUserSCRAMCredentials: ALTER on the cluster; each user gets the error.
func alterUserSCRAMCredentials(x *filter.Exchange, v *acl.View) (pending, bool) {
	r := x.Request.(*kmsg.AlterUserSCRAMCredentialsRequest)
	var users []string
	for _, d := range r.Deletions {
		users = append(users, d.Name)
	}
	for _, u := range r.Upsertions {
		users = append(users, u.Name)
	}
	return clusterAnswer(v, acl.Alter, func(resp kmsg.Response) {
		ar := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
		for _, u := range users {
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = u, clusterDenied
			ar.Results = append(ar.Results, res)
		}
	})
}
