"""The local stack's tables are the ones template.yaml declares (one source of truth)."""

import pytest

from assist.aws.clients import client
from assist.aws.resources import TABLES, load_template

pytestmark = pytest.mark.integration


def test_tables_match_the_template(base_settings):
    ddb = client("dynamodb", base_settings)
    resources = load_template()["Resources"]
    for logical, field in TABLES.items():
        declared = resources[logical]["Properties"]
        actual = ddb.describe_table(TableName=getattr(base_settings, field))["Table"]
        assert actual["KeySchema"] == declared["KeySchema"]
        assert sorted(actual["AttributeDefinitions"], key=str) == sorted(declared["AttributeDefinitions"], key=str)
        ttl = ddb.describe_time_to_live(TableName=getattr(base_settings, field))["TimeToLiveDescription"]
        assert ttl["AttributeName"] == declared["TimeToLiveSpecification"]["AttributeName"]


def test_bucket_exists_with_versioning(base_settings):
    s3 = client("s3", base_settings)
    assert s3.get_bucket_versioning(Bucket=base_settings.bucket)["Status"] == "Enabled"
