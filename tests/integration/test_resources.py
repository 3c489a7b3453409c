"""The local stack's tables are the ones template.yaml declares (one source of truth)."""

import pytest

from assist.aws.clients import client
from assist_dev.local.resources import TABLES, load_template

pytestmark = pytest.mark.integration


def test_tables_match_the_template(base_settings):
    ddb = client("dynamodb", base_settings)
    resources = load_template()["Resources"]
    for logical, table_name in TABLES.items():
        declared = resources[logical]["Properties"]
        actual = ddb.describe_table(TableName=table_name(base_settings))["Table"]
        assert actual["KeySchema"] == declared["KeySchema"]
        assert sorted(actual["AttributeDefinitions"], key=str) == sorted(declared["AttributeDefinitions"], key=str)
        ttl = ddb.describe_time_to_live(TableName=table_name(base_settings))["TimeToLiveDescription"]
        assert ttl["AttributeName"] == declared["TimeToLiveSpecification"]["AttributeName"]


def test_bucket_exists_with_versioning(base_settings):
    s3 = client("s3", base_settings)
    assert s3.get_bucket_versioning(Bucket=base_settings.aws.bucket)["Status"] == "Enabled"


def test_every_table_and_bucket_the_template_declares_exists_locally(base_settings):
    """A table or bucket added to template.yaml without a local counterpart fails here."""
    from assist_dev.local.resources import BUCKET

    resources = load_template()["Resources"]
    declared_tables = {k for k, v in resources.items() if v["Type"] == "AWS::DynamoDB::Table"}
    declared_buckets = {k for k, v in resources.items() if v["Type"] == "AWS::S3::Bucket"}
    assert declared_tables == set(TABLES)
    assert declared_buckets == {BUCKET}
    tables = set(client("dynamodb", base_settings).list_tables()["TableNames"])
    assert {table_name(base_settings) for table_name in TABLES.values()} <= tables
    buckets = {b["Name"] for b in client("s3", base_settings).list_buckets()["Buckets"]}
    assert base_settings.aws.bucket in buckets
